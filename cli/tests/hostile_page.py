"""A hostile web page against a local `mnemon serve` (no token), in a real browser.

Usage: hostile_page.py BASE_URL CHROMIUM

The page is served from another origin (a second port on loopback) and tries what any page on the
web can: an image, a script and a stylesheet whose URLs name new stores, `no-cors` fetches (GET,
and POST with a text body), and a form posted into a hidden frame. The test around it checks that
the server's data directory gained no file. Prints "page done" once the page has settled.
"""

import http.server
import sys
import threading

from playwright.sync_api import sync_playwright

BASE, CHROMIUM = sys.argv[1:3]

PAGE = f"""<!doctype html><html><head>
<link rel="stylesheet" href="{BASE}/v1/count?user_id=ana&store=css.db">
<script src="{BASE}/v1/export?user_id=ana&store=script.db"></script>
</head><body>
<img src="{BASE}/v1/count?user_id=ana&store=pwned.db">
<img src="{BASE}/v1/memories?user_id=ana&store=img2.db">
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" target="sink" enctype="text/plain"
      action="{BASE}/v1/memories?store=form.db">
<input name='{{"user_id":"ana","memories":["x"],"store":"form2.db","pad":"' value='"}}'>
</form>
<script>
const tries = [
  fetch("{BASE}/v1/count?user_id=ana&store=fetch.db", {{mode: "no-cors"}}),
  fetch("{BASE}/v1/memories", {{mode: "no-cors", method: "POST",
    body: JSON.stringify({{user_id: "ana", memories: ["x"], store: "post.db"}})}}),
  fetch("{BASE}/v1/messages", {{mode: "no-cors", method: "POST", headers: {{"Content-Type": "text/plain"}},
    body: JSON.stringify({{user_id: "ana", store: "msg.db",
      messages: [{{role: "user", content: "x", ts: "2026-01-01"}}]}})}}),
  fetch("{BASE}/v1/memories/copy", {{mode: "no-cors", method: "POST",
    body: JSON.stringify({{user_id: "ana", keys: ["n-0000000000000000"], to: "copy.db"}})}}),
];
document.getElementById("f").submit();
Promise.allSettled(tries).then(() => {{ window.__done = true; }});
</script></body></html>"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


site = http.server.HTTPServer(("127.0.0.1", 0), Page)
threading.Thread(target=site.serve_forever, daemon=True).start()
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_page()
    page.goto(f"http://127.0.0.1:{site.server_address[1]}/")
    page.wait_for_function("window.__done === true", timeout=20000)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)
    browser.close()
site.shutdown()
print("page done")
