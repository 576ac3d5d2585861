"""The suite's own hygiene: what it needs and that it leaves the real HOME alone."""
