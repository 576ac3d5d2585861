#pragma once
#define C0 0.6f
#define C1 0.1f
#define C2 0.1f
