#!/usr/bin/env python3
"""A small local notes service with a JSON API, standing in for the HTTP APIs people run
on their own machines. Standard library only.

    python3 examples/notes-api/notes_api.py [--port 8765]

GET /notes?q=TEXT&tag=TAG&limit=N   list notes (newest first)
GET /notes/ID                       one note
POST /notes {title, body, tags}     create a note
DELETE /notes/ID                    delete a note

When NOTES_TOKEN is set, every request needs `Authorization: Bearer <token>`.
"""

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

NOTES = {}
NEXT_ID = [1]
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def reply(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        token = os.environ.get("NOTES_TOKEN")
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            self.reply(401, {"error": "missing or wrong token"})
            return False
        return True

    def note_id(self, path):
        parts = path.split("/")
        if len(parts) != 3 or parts[1] != "notes":
            return None
        return unquote(parts[2])

    def do_GET(self):
        if not self.authorized():
            return
        url = urlsplit(self.path)
        if url.path == "/notes":
            query = parse_qs(url.query)
            q = query.get("q", [""])[0].lower()
            tag = query.get("tag", [None])[0]
            limit = int(query.get("limit", ["50"])[0])
            with LOCK:
                notes = sorted(NOTES.values(), key=lambda n: -n["id"])
            notes = [
                n for n in notes
                if (q in n["title"].lower() or q in n["body"].lower())
                and (tag is None or tag in n["tags"])
            ]
            return self.reply(200, {"notes": notes[:limit]})
        nid = self.note_id(url.path)
        with LOCK:
            note = NOTES.get(nid)
        if note is None:
            return self.reply(404, {"error": f"no note {nid!r}"})
        self.reply(200, note)

    def do_POST(self):
        if not self.authorized():
            return
        if urlsplit(self.path).path != "/notes":
            return self.reply(404, {"error": "not found"})
        length = int(self.headers.get("Content-Length", "0"))
        try:
            data = json.loads(self.rfile.read(length))
            title, body = str(data["title"]), str(data.get("body", ""))
            tags = [str(t) for t in data.get("tags", [])]
        except (ValueError, KeyError, TypeError) as e:
            return self.reply(400, {"error": f"bad note: {e}"})
        with LOCK:
            nid = str(NEXT_ID[0])
            NEXT_ID[0] += 1
            note = {"id": int(nid), "title": title, "body": body, "tags": tags}
            NOTES[nid] = note
        self.reply(201, note)

    def do_DELETE(self):
        if not self.authorized():
            return
        nid = self.note_id(urlsplit(self.path).path)
        with LOCK:
            note = NOTES.pop(nid, None)
        if note is None:
            return self.reply(404, {"error": f"no note {nid!r}"})
        self.reply(200, {"deleted": note["id"]})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"notes API on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
