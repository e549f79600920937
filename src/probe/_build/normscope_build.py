"""normscope_build.py - the probe's own PEP 517 build backend.

pip builds a package in an isolated environment whose build requirements
it downloads; offline (or with no index at all) a setuptools requirement
cannot be met. This backend needs nothing but the standard library, so
`pip install ./src/probe` works offline into any virtualenv. It writes a
pure-Python wheel (and an sdist) of the normscope_probe package, named and
versioned from pyproject.toml and normscope_probe/version.py, the one
place the version is written. Not a general build tool.
"""
import base64
import hashlib
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "normscope_probe"


def _version():
    with open(os.path.join(ROOT, PKG, "version.py"), encoding="utf-8") as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


def _project():
    """name, description and requires-python from pyproject.toml's [project]."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("[project]", 1)[1].split("\n[", 1)[0]
    get = lambda k: re.search(r'^%s = "([^"]*)"' % k, block, re.M).group(1)  # noqa: E731
    return get("name"), get("description"), get("requires-python")


def _metadata():
    name, desc, py = _project()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "Description-Content-Type: text/markdown\n\n%s" % (name, _version(), desc, py, readme))


def _files():
    d = os.path.join(ROOT, PKG)
    return sorted("%s/%s" % (PKG, f) for f in os.listdir(d) if f.endswith(".py"))


def _dist(name):
    return "%s-%s" % (name.replace("-", "_"), _version())


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = _dist(_project()[0]) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return info


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = _dist(_project()[0])
    info = dist + ".dist-info"
    wheel = "%s-py3-none-any.whl" % dist
    entries = [(p, open(os.path.join(ROOT, p), "rb").read()) for p in _files()]
    entries += [(info + "/METADATA", _metadata().encode()),
                (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: normscope_build\n"
                                  b"Root-Is-Purelib: true\nTag: py3-none-any\n")]
    record = [_record_line(p, d) for p, d in entries] + [info + "/RECORD,,"]
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in entries:
            z.writestr(p, d)
        z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    dist = _dist(_project()[0])
    name = dist + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for p in ["pyproject.toml", "README.md", "_build/normscope_build.py"] + _files():
            t.add(os.path.join(ROOT, p), arcname="%s/%s" % (dist, p))
    return name
