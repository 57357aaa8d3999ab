"""The MkDocs site builds with `--strict`, and every page of it, loaded in headless
Chromium from a local server, shows its formulas as MathML (no raw `\\(` or `$$` in the
rendered text) and its images from files that exist in the site and are valid images.

Needs the `docs` extra (skipped without mkdocs) and, for the browser, the Debian package
`chromium` at /usr/bin/chromium (skipped without it)."""

import functools
import html
import importlib.util
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
IMAGE_MAGIC = {b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8\xff": "jpeg", b"GIF8": "gif"}

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="needs the docs extra (mkdocs)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def pages(site: Path) -> list[str]:
    """Every page's path under the site, `index.html` for the home page."""
    return sorted(p.relative_to(site).as_posix() for p in site.glob("**/index.html"))


def test_site_builds_strictly_with_every_page(site):
    built = pages(site)
    assert "reference/index.html" in built and "sharding/index.html" in built
    assert len(built) == len(list((ROOT / "docs").glob("*.md")))


def test_every_image_resolves_to_a_valid_image(site):
    """Each `<img>` of each page names a file of the site that is a PNG, JPEG, GIF or
    SVG; the home page shows the demo's reconstruction, "Splitting and devices" the split
    diagram and the benchmarks page the ratio plots."""
    shown = set()
    for page in pages(site):
        for src in re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', (site / page).read_text()):
            assert not urlparse(src).scheme, f"{page}: {src} is not part of the site"
            target = (site / page).parent / unquote(urlparse(src).path)
            assert target.is_file(), f"{page}: <img src={src!r}> is missing from the site"
            head = target.read_bytes()[:512]
            kind = next((k for m, k in IMAGE_MAGIC.items() if head.startswith(m)), None)
            assert kind or b"<svg" in head, f"{page}: {src} is not an image"
            if kind == "png":
                pil = pytest.importorskip("PIL.Image")
                with pil.open(target) as image:
                    image.verify()
            shown.add((page, target.resolve().relative_to(site.resolve()).as_posix()))
    assert ("index.html", "img/demo-reconstruction.png") in shown
    assert ("sharding/index.html", "img/split-diagram.png") in shown
    assert ("benchmarks/index.html", "img/bench-cpu-2core.png") in shown


@pytest.fixture(scope="module")
def server(site):
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no line per request
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    thread.join()
    httpd.server_close()


def rendered_dom(url: str, profile: Path) -> str:
    """The DOM of `url` after Chromium loaded it and ran its scripts."""
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"chromium failed on {url}: {result.stderr[-2000:]}"
    return result.stdout


def visible_text(dom: str) -> str:
    """The text of the page's article, without code (where a `\\(` may be literal)."""
    article = re.search(r"<article\b.*?</article>", dom, re.S)
    assert article, "the page has no article: it did not load"
    text = re.sub(r"<(pre|code|script|style)\b.*?</\1>", " ", article[0], flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"needs Chromium at {CHROMIUM}")
def test_pages_render_in_headless_chromium(site, server, tmp_path):
    """Every page loads and its article shows text; no formula is left as LaTeX (`\\(`,
    `\\[`, `$$`), the pages with formulas hold MathML, and the images the browser sees
    resolve to files of the site."""
    urls = [urljoin(server, page.removesuffix("index.html")) for page in pages(site)]
    profiles = [tmp_path / f"profile{i}" for i in range(len(urls))]  # a fresh one each
    with ThreadPoolExecutor(2) as pool:
        doms = dict(zip(urls, pool.map(rendered_dom, urls, profiles), strict=True))
    with_math = 0
    for url, dom in doms.items():
        text = visible_text(dom)
        assert len(text.split()) > 20, f"{url} shows almost nothing"
        raw = re.search(r".{0,40}(\\\(|\\\[|\$\$).{0,40}", text, re.S)
        assert not raw, f"{url} shows raw LaTeX: {raw[0]!r}"
        with_math += "<math" in dom
        for src in re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', dom):
            path = urlparse(urljoin(url, src)).path
            assert (site / unquote(path).lstrip("/")).is_file(), f"{url}: {src} does not resolve"
    assert with_math >= 8  # sharding, solvers, nufft, mri, ... and the API reference
