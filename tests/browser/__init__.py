"""Cross-cutting: a real browser (Playwright's chromium) against JupyterLab."""
