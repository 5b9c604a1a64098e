"""The check a page writes for headless-browser tests: the text of the element with a given id
in a DOM that `chromium --dump-dom` printed, as JSON (report.js's #report-check, peers_bench's
#page-check). None when the page never wrote it (its script stopped before the end)."""
import html.parser
import json
import os
import shutil
import subprocess
import tempfile


class _Element(html.parser.HTMLParser):
    def __init__(self, element_id):
        super().__init__()
        self.element_id, self.inside, self.text = element_id, False, None

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == self.element_id:
            self.inside, self.text = True, ""

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.text += data


def read_check(dom, element_id):
    parser = _Element(element_id)
    parser.feed(dom)
    return json.loads(parser.text) if parser.text else None


def open_offline(write_page, name, screenshot=False):
    """Writes a page with write_page(path), opens it in headless Chromium offline (an
    unroutable proxy, so anything it fetched would fail) and returns (its #page-check with no
    script errors, the screenshot's bytes or None); None without Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        return None
    work = tempfile.mkdtemp()
    try:
        page = os.path.join(work, name)
        write_page(page)
        chrome = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--enable-unsafe-swiftshader",
                  "--hide-scrollbars", f"--user-data-dir={work}/chrome", "--proxy-server=127.0.0.1:9",
                  "--virtual-time-budget=15000"]
        dom = subprocess.run(chrome + ["--dump-dom", "file://" + page], capture_output=True, text=True, timeout=120)
        image = None
        if screenshot:
            png = os.path.join(work, "page.png")
            subprocess.run(chrome + ["--window-size=1200,1600", f"--screenshot={png}", "file://" + page],
                           capture_output=True, timeout=120)
            with open(png, "rb") as f:
                image = f.read()
        check = read_check(dom.stdout, "page-check")
        assert check, f"the page wrote no #page-check: its script did not run to the end\n{dom.stderr[-2000:]}"
        assert check["errors"] == [], f"errors in the page: {check['errors']}"
        return check, image
    finally:
        shutil.rmtree(work, ignore_errors=True)
