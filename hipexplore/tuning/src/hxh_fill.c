/* Host twin of the generated hx fill: zero FILL_N floats. */
void hx_fill(float* c)
{
    for (long i = 0; i < (long)(FILL_N); ++i) c[i] = 0.0f;
}
