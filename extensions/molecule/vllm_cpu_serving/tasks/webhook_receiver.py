"""TEST DOUBLE: a webhook receiver for Alertmanager (molecule observability). Appends each POSTed body as one
JSON line to the file named by its first argument; listens on 127.0.0.1, port of its second argument."""

import http.server
import sys

OUT, PORT = sys.argv[1], int(sys.argv[2])


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(OUT, "ab") as handle:
            handle.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.end_headers()


http.server.HTTPServer(("127.0.0.1", PORT), Receiver).serve_forever()
