#!/usr/bin/env bash
# A large workspace of real code for the cache benchmark: this machine's Python standard
# library plus the source distributions of 32 PyPI packages (Python, C, JS, TS, Go...).
#   usage: cache/make_big_workspace.sh DIR      (about 15k files; needs PyPI)
set -euo pipefail
out=${1:?usage: cache/make_big_workspace.sh DIR}
mkdir -p "$out/sdists" "$out/stdlib"
stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
cp -r "$stdlib"/. "$out/stdlib/"
rm -rf "$out/stdlib/site-packages"
packages="django sympy mypy transformers sqlalchemy requests flask werkzeug jinja2 click
  pytest setuptools black httpx starlette fastapi pydantic attrs rich typer aiohttp
  tornado twisted scrapy celery kombu boto3 pygments docutils sphinx networkx bokeh"
# The sdist of each package's newest release, straight from PyPI's JSON API (pip download
# would try to build each one's metadata, and some fail to).
python3 - "$out/sdists" $packages <<'PY'
import io, json, sys, tarfile, urllib.parse, urllib.request, zipfile
out, names = sys.argv[1], sys.argv[2:]
for name in names:
    try:
        index = f"https://pypi.org/pypi/{name}/json"
        meta = json.load(urllib.request.urlopen(index, timeout=60))
        url = next(u["url"] for u in meta["urls"] if u["packagetype"] == "sdist")
        url = urllib.parse.urljoin(index, url)  # a mirror may answer with relative links
        data = urllib.request.urlopen(url, timeout=300).read()
        if url.endswith(".zip"):
            zipfile.ZipFile(io.BytesIO(data)).extractall(out)
        else:
            tarfile.open(fileobj=io.BytesIO(data)).extractall(out, filter="data")
        print(f"{name}: {len(data) // 1024} KiB", file=sys.stderr)
    except Exception as exc:  # one missing package does not spoil the workspace
        print(f"{name}: skipped ({exc})", file=sys.stderr)
PY
find "$out" -type f | wc -l | xargs echo "files:"
