"""How the book's tools and browser tests start Chromium (through Playwright): headless, without
a sandbox (containers and CI runners), without a GPU, and with nothing that reaches the network
by itself (updates, sync, QUIC), so that every request a page makes is one the page asked for.
``tools/print_pdf.py`` prints the book with these flags; ``tests/book/html`` opens its pages
with them."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
