#!/usr/bin/env python3
"""Checks the internal links of the built book and of the Markdown front doors; never opens the network.

Usage: check-links.py BOOK_HTML_DIR

- In the built book (mdbook's HTML output, BOOK_HTML_DIR): every relative href and src resolves to
  a file, and every #anchor to an id in that file. Links that leave the book (../../harness/src/...)
  resolve from the HTML folder exactly as from docs/src/, because the build folder sits beside src/.
- In README.md, results/README.md and deploy/kubernetes/README.md: every relative link resolves to a
  file or folder, and every #anchor into a Markdown file to one of its headings (GitHub's ids).

External links (http:, https:, mailto:) are not checked: CI has no network.
Exit 0 when every link resolves, 1 with one line per broken link otherwise.
"""

import html.parser
import pathlib
import re
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
FRONT_DOORS = ["README.md", "results/README.md", "deploy/kubernetes/README.md"]


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value and ((name == "href" and tag == "a") or (name == "src" and tag == "img")):
                self.links.append(value)


def parse_html(path, cache={}):
    if path not in cache:
        parser = Links()
        parser.feed(path.read_text(encoding="utf-8"))
        cache[path] = parser
    return cache[path]


def external(link):
    return re.match(r"^[a-z][a-z0-9+.-]*:", link) is not None


def check_book(book):
    broken = []
    pages = sorted(p for p in book.rglob("*.html") if p.name not in ("print.html", "toc.html", "404.html"))
    if not pages:
        return [f"{book}: no HTML pages (was the book built?)"]
    for page in pages:
        for link in parse_html(page).links:
            if external(link):
                continue
            path, _, anchor = urllib.parse.unquote(link).partition("#")
            target = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(book)}: {link}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif anchor and target.suffix == ".html" and anchor not in parse_html(target).ids:
                broken.append(f"{where}: no anchor #{anchor} in {target.name}")
    return broken


def slug(heading):
    """GitHub's heading id (and mdbook's): lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"<[^>]*>|`", "", heading).strip().lower()
    return "".join(c if (c.isalnum() or c in "-_") else "-" if c.isspace() else "" for c in text)


def markdown_anchors(path):
    anchors, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            m = re.match(r"^#+ (.*)$", line)
            if m:
                anchors.add(slug(m.group(1)))
    return anchors


def check_markdown(rel):
    broken = []
    path = ROOT / rel
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if external(link):
            continue
        target_rel, _, anchor = link.partition("#")
        target = (path.parent / target_rel).resolve() if target_rel else path
        if not target.exists():
            broken.append(f"{rel}: {link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in markdown_anchors(target):
            broken.append(f"{rel}: {link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    return broken


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    broken = check_book(pathlib.Path(sys.argv[1]).resolve())
    for rel in FRONT_DOORS:
        broken += check_markdown(rel)
    for line in broken:
        print(f"broken link: {line}")
    if broken:
        sys.exit(1)
    print("links: every internal link and anchor resolves")


if __name__ == "__main__":
    main()
