"""Serve a built book as GitHub Pages serves it: text files gzip-compressed, cached ten minutes.

Usage: ``python benchmarks/lighthouse/serve_gzipped.py _build/html 8701``. For the Lighthouse
record in ``benchmarks/lighthouse/README.md`` only (no test reads it).
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import sys
from pathlib import Path

TEXT = {".html", ".css", ".js", ".json", ".svg", ".txt", ".inv"}


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=600")  # GitHub Pages' header
        super().end_headers()

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.suffix in TEXT and path.is_file()):
            return super().send_head()
        data = gzip.compress(path.read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return io.BytesIO(data)


def main() -> None:
    root, port = Path(sys.argv[1]).resolve(), int(sys.argv[2])
    handler = functools.partial(GzipHandler, directory=str(root))
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


if __name__ == "__main__":
    main()
