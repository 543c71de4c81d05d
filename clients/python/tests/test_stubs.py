"""The committed stubs are what gen_stubs.py makes of proto/queens.proto now, and the wheel
installed them as committed."""

from __future__ import annotations

import pathlib
import sys

import queens_client.pb

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import gen_stubs  # noqa: E402  (clients/python/gen_stubs.py)


def test_committed_stubs_match_the_proto(tmp_path: pathlib.Path) -> None:
    gen_stubs.generate(tmp_path)
    for name in gen_stubs.STUBS:
        committed = (gen_stubs.PACKAGE_STUBS / name).read_text()
        assert committed == (tmp_path / name).read_text(), (
            f"src/queens_client/pb/{name} differs from the proto's: run "
            "`python gen_stubs.py` in clients/python and commit the result"
        )


def test_the_installed_package_is_the_wheel_not_the_source() -> None:
    installed = pathlib.Path(queens_client.pb.__file__).parent
    assert installed != gen_stubs.PACKAGE_STUBS
    assert "site-packages" in installed.parts
    for name in (*gen_stubs.STUBS, "__init__.py"):
        assert (installed / name).read_bytes() == (
            gen_stubs.PACKAGE_STUBS / name
        ).read_bytes()
    assert (installed.parent / "py.typed").exists()
