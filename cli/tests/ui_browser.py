"""The web page at /ui in a real browser (Debian's chromium, driven by Playwright).

Usage: ui_browser.py BASE_URL TOKEN CHROMIUM SCREENSHOT_DIR

The server runs with the hashing embedder, a scripted extractor (a home in January superseded by
a move in June) and TOKEN. This script seeds it through the JSON API, then walks every view at
1280 and 390 pixels wide, checking what a person sees against what the API says, and saves a
screenshot of each view. Prints "all checks passed" at the end.
"""

import json
import os
import sys
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE, TOKEN, CHROMIUM, SHOTS = sys.argv[1:5]
XSS = [
    "<script>window.__xss = 1</script>",
    '<img src="x" onerror="window.__xss = 2">',
]
XSS_USER = '<img src=x onerror="window.__xss=3">'
CHECKS = []


def check(name, ok, detail=""):
    CHECKS.append(name)
    if not ok:
        raise AssertionError(f"{name}: {detail}")


def call(method, path, body=None, token=TOKEN):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req) as r:
            text = r.read().decode()
            kind = r.headers.get("content-type", "")
            return r.status, (json.loads(text) if "json" in kind else text), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "{}"), e.headers


def ok(method, path, body=None):
    status, answer, _ = call(method, path, body)
    assert status == 200, f"{method} {path}: {status} {answer}"
    return answer


def seed():
    def say(user, text, ts, session, reply=None):
        messages = [{"role": "user", "content": text, "ts": ts, "session": session}]
        if reply:
            messages.append({"role": "assistant", "content": reply, "ts": ts, "session": session})
        ok("POST", "/v1/messages", {"user_id": user, "messages": messages})

    say("maya", "I live in Porto, near the river.", "2024-01-10T10:00:00", "a", "Porto is lovely.")
    for d in range(1, 6):
        say("maya", f"Small talk {d}.", f"2024-03-0{d}T10:00:00", "c")
    say("maya", XSS[0], "2024-03-09T10:00:00", "c", XSS[1])
    say("maya", "Big news: I moved to Lisbon last week!", "2024-06-02T09:00:00", "b", "Congratulations!")
    notes = [
        {"content": "The user's favourite tea is sencha.", "tags": ["food"], "ts": "2024-02-01T08:00:00"},
        {"content": "The user prefers window seats on trains.", "tags": ["travel"], "ts": "2024-02-02T08:00:00"},
        {"content": "The user's dentist is Dr. Alves.", "tags": ["health"], "ts": "2024-02-03T08:00:00"},
        {"content": XSS[0], "tags": [XSS[1]], "title": XSS[1], "ts": "2024-02-04T08:00:00"},
    ]
    ok("POST", "/v1/memories", {"user_id": "maya", "memories": notes})
    ok("POST", "/v1/memories", {"user_id": "maya", "agent_id": "tutor", "memories": [{"content": "Studies Portuguese on Mondays.", "ts": "2024-06-03T08:00:00"}]})
    say("bob", "Hello there.", "2024-02-01T10:00:00", "x")
    say(XSS_USER, "Payload user.", "2024-02-01T10:00:00", "x")
    # A second store, for the store picker and for copies.
    ok("POST", "/v1/memories", {"user_id": "zed", "store": "work.db", "memories": ["Zed works on the bridge project."]})


def note_key(content, store=None):
    body = {"user_id": "maya", "limit": 100}
    if store:
        body["store"] = store
    for n in ok("POST", "/v1/memories/list", body)["notes"]:
        if n["content"] == content:
            return n["key"]
    return None


def contrast_failures(page):
    """Elements whose text contrast is under 4.5:1 against the background behind them."""
    return page.evaluate(
        """() => {
        const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
        const lum = ([r, g, b]) => {
          const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
          return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        const background = (el) => {
          for (let e = el; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor);
            if (c.length >= 3 && (c.length < 4 || c[3] > 0)) return c;
          }
          return [255, 255, 255];
        };
        const bad = [];
        for (const el of document.querySelectorAll('body *')) {
          if (!el.offsetParent && el.tagName !== 'BODY') continue;
          const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
          if (!own) continue;
          const fg = rgb(getComputedStyle(el).color);
          const [a, b] = [lum(fg), lum(background(el))].sort((x, y) => y - x);
          const ratio = (a + 0.05) / (b + 0.05);
          if (ratio < 4.5) bad.push(`${el.tagName}.${el.className}: ${ratio.toFixed(2)}`);
        }
        return bad;
    }"""
    )


def main():
    seed()
    # The page and its assets: strict headers, no token needed to load them.
    status, html, headers = call("GET", "/ui", token=None)
    csp = headers.get("content-security-policy", "")
    check("the page is served with a strict CSP", status == 200 and "script-src 'self'" in csp and "default-src 'none'" in csp
          and "frame-ancestors 'none'" in csp, csp)
    status, _, _ = call("GET", "/v1/users", token=None)
    check("the API needs the token", status == 401, status)

    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"],
        )
        for width, height in [(1280, 900), (390, 844)]:
            walk(browser, width, height)
        browser.close()
    print(f"{len(CHECKS)} checks: " + "; ".join(CHECKS))
    print("all checks passed")


def walk(browser, width, height):
    wide = width > 500
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # The browser logs every refused request; the ones this walk makes on purpose are expected.
    expected = ("status of 401", "status of 400")
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and not any(x in m.text for x in expected) else None)
    page.on("dialog", lambda d: d.accept())
    shot = lambda name: page.screenshot(path=os.path.join(SHOTS, f"{name}-{width}.png"), full_page=True)

    # The token: asked for, kept for the tab.
    page.goto(BASE + "/ui")
    expect(page.locator("#token-panel")).to_be_visible()
    expect(page.locator("#token-why")).to_contain_text("needs a token")
    shot("token")
    page.fill("#token-input", TOKEN)
    page.press("#token-input", "Enter")
    expect(page.locator("#token-panel")).to_be_hidden()
    check(f"{width}: the token is kept for the tab only", page.evaluate("sessionStorage.getItem('mnemon.token')") == TOKEN
          and page.evaluate("localStorage.length") == 0)

    # Users: counts per kind, agents; a user found by name.
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(3)
    maya = page.locator("tbody tr", has_text="maya")
    expect(maya.locator("td").nth(1)).to_have_text("8")
    expect(maya.locator("a.chip")).to_have_text("tutor · 1")
    expect(page.locator("tbody th a", has_text="onerror")).to_have_text(XSS_USER)
    shot("users")
    page.fill("#find-user", "may")
    expect(rows).to_have_count(1)
    check(f"{width}: users listed and found", True)

    # A store picked: its own users.
    if wide:
        page.select_option("#store", "work.db")
        expect(page.locator("tbody tr")).to_have_count(1)
        expect(page.locator("tbody tr")).to_contain_text("zed")
        page.select_option("#store", "")
        expect(page.locator("tbody tr")).to_have_count(3)
        check("a store is opened from the picker", True)
        page.fill("#find-user", "may")

    # The timeline: the superseded home struck through, with its rule, both values and its replacement.
    page.click("tbody th a")
    expect(page.locator("h1")).to_contain_text("maya")
    expect(page.locator("article.round")).to_have_count(8)
    old = page.locator("li.fact.superseded")
    expect(old).to_have_count(1)
    expect(old.locator("s")).to_have_text("The user lives in Porto.")
    expect(old.locator(".rule")).to_contain_text("superseded by rule ")
    check(f"{width}: the rule is named", "unrecorded" not in old.locator(".rule").inner_text())
    expect(old.locator(".why")).to_contain_text(": Porto → Lisbon")
    old.locator("button.link").click()
    expect(old.locator(".replacement")).to_contain_text("The user moved to Lisbon.")
    expect(page.locator("li.fact .when")).to_contain_text("“last week” → 2024-05")
    expect(page.locator("p.turn", has_text="window.__xss = 1")).to_have_count(1)
    shot("timeline")
    check(f"{width}: supersession struck through with its rule and replacement", True)

    # Keyboard: the Notes tab reached with Tab and opened with Enter.
    page.locator("h1").click()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.textContent") == "Notes":
            break
    else:
        raise AssertionError("the Notes tab is not reachable with Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#notes-go")).to_be_visible()
    check(f"{width}: tabs reachable by keyboard", True)

    # Notes: search, edit (and the API's validation message), delete, copy.
    expect(page.locator("#notes-out tbody tr")).to_have_count(5)
    expect(page.locator("#notes-out .content", has_text="<script>")).to_have_text(XSS[0])
    shot("notes")
    page.fill("#notes-query", "favourite tea")
    page.click("#notes-go")
    tea = page.locator("#notes-out tbody tr").first
    expect(tea).to_contain_text("favourite tea")
    tea_key = tea.get_attribute("data-key")
    expect(tea.locator(".label")).to_be_visible()
    tea.locator("button.edit").click()
    tea.locator(".edit-importance").fill("7")
    tea.locator("button.save").click()
    expect(page.locator("#notes-message .status.error")).to_contain_text("importance")
    _, api_error, _ = call("PATCH", f"/v1/memories/{tea_key}", {"user_id": "maya", "importance": 7})
    check(f"{width}: the page shows the API's validation message",
          api_error["error"]["message"] in page.locator("#notes-message").inner_text(), api_error)
    new_tea = f"The user's favourite tea is genmaicha ({width})."
    tea.locator(".edit-importance").fill("0.8")
    tea.locator(".edit-content").fill(new_tea)
    tea.locator("button.save").click()
    expect(page.locator("#notes-message .status.ok")).to_contain_text("Saved")
    check(f"{width}: an edit is stored", note_key(new_tea) is not None)
    page.fill("#notes-query", "")
    page.click("#notes-go")
    dentist = page.locator("#notes-out tbody tr", has_text="Dr. Alves")
    key = dentist.get_attribute("data-key")
    if wide:
        dentist.locator("button.transfer").click()
        dentist.locator(".transfer-to").fill("work.db")
        dentist.locator("button.copy").click()
        expect(page.locator("#notes-message .status.ok")).to_contain_text("Copied to work.db")
        check("a copy lands in the other store", note_key("The user's dentist is Dr. Alves.", "work.db") is not None)
        dentist = page.locator("#notes-out tbody tr", has_text="Dr. Alves")
    dentist.locator("button.delete").click()
    expect(page.locator("#notes-out tbody tr", has_text="Dr. Alves")).to_have_count(0)
    status, _, _ = call("GET", f"/v1/memories/{key}?user_id=maya")
    check(f"{width}: a deleted note is gone", status == 404, status)
    ok("POST", "/v1/memories", {"user_id": "maya", "memories": [{"content": "The user's dentist is Dr. Alves.", "tags": ["health"], "ts": "2024-02-03T08:00:00"}]})

    # What would the agent see: the block byte for byte as /v1/recall gives it, every record explained.
    page.click("nav.tabs a:has-text('What would the agent see?')")
    page.fill("#ask-query", "Where does the user live?")
    page.fill("#ask-budget", "200")
    page.click("#ask-go")
    expect(page.locator("#ask-block")).to_be_visible()
    recalled = ok("POST", "/v1/recall", {"user_id": "maya", "query": "Where does the user live?", "budget": 200})
    shown = page.locator("#ask-block").evaluate("e => e.textContent")
    check(f"{width}: the block is byte for byte /v1/recall's", shown == recalled["context"], (shown, recalled["context"]))
    expect(page.locator("#ask-out tr.kept")).to_have_count(len(recalled["rounds"]) + len(recalled["memories"]))
    check(f"{width}: what the budget cut is listed", page.locator("#ask-out tr.cut").count() >= 1)
    expect(page.locator("#ask-out .meter")).to_contain_text(f"{recalled['tokens']} tokens of 200 budget")
    shot("ask")
    # As it stood before the move: the old home is current then.
    page.fill("#ask-budget", "")
    page.fill("#ask-asof", "2024-02-01")
    page.click("#ask-go")
    expect(page.locator("#ask-block")).to_contain_text("I live in Porto")
    expect(page.locator("#ask-block")).not_to_contain_text("Lisbon")
    check(f"{width}: the date picker shows the memory as it stood then", True)

    # The decision log by kind.
    page.click("nav.tabs a:has-text('Decision log')")
    expect(page.locator("tbody tr").first).to_be_visible()
    page.select_option("#decision-kind", "fact.superseded")
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr")).to_contain_text("\"rule\"")
    shot("decisions")
    check(f"{width}: the decision log filters by kind", True)

    # The profile: the current home, replaced once; the old one is not there.
    page.click("nav.tabs a:has-text('Profile')")
    home = page.locator("tbody tr", has_text="lives_in")
    expect(home).to_have_count(1)
    expect(home).to_contain_text("The user moved to Lisbon.")
    expect(page.locator("#tab-body")).not_to_contain_text("Porto")
    check(f"{width}: the profile shows the current home, changed once", home.locator("td").last.inner_text() == "1")
    shot("profile")

    # Activity: charts and their numbers.
    page.click("nav.tabs a:has-text('Activity')")
    expect(page.locator("svg.chart")).to_have_count(2)
    check(f"{width}: the charts have bars", page.locator("svg.chart rect.bar").count() >= 6)
    shot("activity")

    # Export: the download is the API's export.
    page.click("nav.tabs a:has-text('Export')")
    with page.expect_download() as d:
        page.click("#export-markdown")
    got = open(d.value.path(), encoding="utf-8").read()
    check(f"{width}: the Markdown download is the export", got == ok("GET", "/v1/export?user_id=maya&format=markdown"))
    shot("export")

    # Stored payloads stayed text; the page fits the width.
    check(f"{width}: no stored payload ran", page.evaluate("window.__xss") is None)
    overflow = page.evaluate("document.documentElement.scrollWidth")
    check(f"{width}: nothing overflows the width", overflow <= width, overflow)
    page.click("nav.tabs a:has-text('Timeline')")
    expect(page.locator("article.round")).to_have_count(8)
    bad = contrast_failures(page)
    check(f"{width}: text contrast at least 4.5:1", not bad, bad)
    check(f"{width}: no script errors", not errors, errors)
    context.close()


if __name__ == "__main__":
    main()
