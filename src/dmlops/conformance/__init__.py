"""Conformance kits: ONNX backend-test directories, WebNN cases in the web-platform-tests
shape, and a differential fuzzer that runs generated models on another ONNX runtime."""

from __future__ import annotations

from .onnx_cases import OPERATORS, OnnxCase, Recipe, generate, make_case

__all__ = ["OPERATORS", "OnnxCase", "Recipe", "generate", "make_case"]
