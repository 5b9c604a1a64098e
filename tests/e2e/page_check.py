"""The check a page writes for headless-browser tests: the text of the element with a given id
in a DOM that `chromium --dump-dom` printed, as JSON (report.js's #report-check, peers_bench's
#page-check). None when the page never wrote it (its script stopped before the end)."""
import html.parser
import json


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
