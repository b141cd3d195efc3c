"""A PEP 517 build backend for the kvbench package, standard library only: a wheel is a zip of
python/kvbench/*.py with its dist-info (PEP 427); an editable wheel (PEP 660) holds one .pth
file naming python/. Name and version come from pyproject.toml's [project] table."""
import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
TAG = "py3-none-any"


def _project():
    with open(os.path.join(HERE, "pyproject.toml")) as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    field = {k: v for k, v in re.findall(r'^(\w[\w-]*)\s*=\s*"([^"]*)"', table, re.M)}
    return field["name"], field["version"], field.get("description", ""), \
        field.get("requires-python", "")


def _metadata():
    name, version, summary, python = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary}"]
    if python:
        lines.append(f"Requires-Python: {python}")
    return "\n".join(lines) + "\n"


def _wheel(directory, files):
    """Writes the wheel of `files` ({archive name: bytes}) into directory; returns its name."""
    name, version, _, _ = _project()
    info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: kvbench_wheel\n"
                              f"Root-Is-Purelib: true\nTag: {TAG}\n").encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{name}-{version}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel


def _package_files():
    files = {}
    package = os.path.join(HERE, "kvbench")
    for entry in sorted(os.listdir(package)):
        if entry.endswith(".py"):
            with open(os.path.join(package, entry), "rb") as f:
                files[f"kvbench/{entry}"] = f.read()
    return files


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"kvbench.pth": (HERE + "\n").encode()})
