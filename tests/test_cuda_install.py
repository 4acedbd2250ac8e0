"""CuPy packaging problems become DmlErrors that say what to install (no GPU needed)."""

from __future__ import annotations

import sys

import pytest

from dmlops import DmlError
from dmlops.backends.cuda import install


def test_two_cupy_packages_are_refused() -> None:
    with pytest.raises(DmlError, match=r"several CuPy packages .*cupy-cuda12x, cupy-cuda13x"):
        install.check_install(["cupy-cuda12x", "cupy-cuda13x"], 13000, 13000)


def test_cupy_newer_than_the_driver_names_the_extra_to_install() -> None:
    with pytest.raises(
        DmlError, match=r"built for CUDA 13\.0 .* supports CUDA 12\.8.*dmlops\[cuda12\]"
    ):
        install.check_install(["cupy-cuda13x"], 12080, 13000)


def test_no_driver() -> None:
    with pytest.raises(DmlError, match="no NVIDIA driver"):
        install.check_install(["cupy-cuda12x"], 0, 12080)


def test_matching_versions_pass() -> None:
    install.check_install(["cupy-cuda12x"], 12080, 12040)  # minor versions are compatible
    install.check_install(["cupy-cuda12x"], 13000, 12080)  # a newer driver runs older CUDA


def test_missing_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.setattr(install, "cupy_distributions", lambda: [])
    with pytest.raises(DmlError, match=r"needs CuPy: pip install 'dmlops\[cuda12\]'"):
        install.import_cupy()


def test_two_packages_are_refused_before_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(install, "cupy_distributions", lambda: ["cupy", "cupy-cuda12x"])
    with pytest.raises(DmlError, match="several CuPy packages"):
        install.import_cupy()


def test_distributions_are_read_from_the_metadata_folders(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata
    from pathlib import Path

    root = Path(str(tmp_path))
    for name in (
        "cupy_cuda12x-13.6.0.dist-info",
        "cupy-14.0.0.dist-info",
        "cupy_rocm_5_0-13.0.0.egg-info",
        "cupyx-1.0.dist-info",  # another project
        "cupy",  # the package itself
        "numpy-2.0.0.dist-info",
    ):
        (root / name).mkdir()
        if name.endswith("-info"):
            (root / name / "METADATA").write_text(f"Name: {name.split('-')[0]}\n")
    monkeypatch.setattr(sys, "path", [str(root), str(root / "absent"), str(root / "cupy")])
    assert install.cupy_distributions() == ["cupy", "cupy-cuda12x", "cupy-rocm-5-0"]
    seen = {
        (d.metadata["Name"] or "").lower().replace("_", "-")
        for d in metadata.distributions(path=[str(root)])
    }
    assert {"cupy", "cupy-cuda12x", "cupy-rocm-5-0"} <= seen  # the names importlib gives
