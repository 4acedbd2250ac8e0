"""The WGSL body of a pick kernel (kernels/pick.wgsl): every R-th element of a row picked
out of R whole source vectors into one destination vector, with every lane, shift and mask
a constant of the kernel (element size, R, phase and direction)."""

from __future__ import annotations

__all__ = ["pick_body", "parse_pick"]

_LANES = "xyzw"
# reorder.wgsl's function that puts a backwards vector's elements in order, per element size
_IN_ORDER = {1: "reverse_bytes", 2: "reverse_halves", 4: "reverse_words", 8: "reverse_pairs"}


def parse_pick(kernel: str) -> tuple[int, int, int, bool]:
    """(element bytes, stride, phase, backwards) of a kernel named pick<es>x<r>p<phase>[r]."""
    es, rest = kernel[4:].split("x")
    backwards = rest.endswith("r")
    r, phase = rest.rstrip("r").split("p")
    return int(es), int(r), int(phase), backwards


def pick_body(es: int, r: int, phase: int, backwards: bool) -> str:
    """copy_at's statements: the R loads, then the destination vector, word by word."""
    lines = [f"let v{k} = load_src(s + {k}u);" for k in range(r)]
    words: list[list[str]] = [[] for _ in range(4)]
    for j in range(16 // es):  # each destination element
        source = (j * r + phase) * es  # its byte in the R vectors read
        if es >= 4:
            for t in range(es // 4):
                word = source // 4 + t
                words[j * es // 4 + t].append(f"v{word // 4}.{_LANES[word % 4]}")
            continue
        word, within = divmod(source, 4)
        mask = (1 << (8 * es)) - 1
        lane = f"v{word // 4}.{_LANES[word % 4]}"
        part = f"(({lane} >> {8 * within}u) & {mask:#x}u)"
        at = (j * es) % 4
        words[j * es // 4].append(part if at == 0 else f"({part} << {8 * at}u)")
    made = ", ".join(" | ".join(parts) for parts in words)
    value = f"vec4<u32>({made})"
    if backwards:
        value = f"{_IN_ORDER[es]}({value})"
    lines.append(f"dst[(*w).dst] = {value};")
    return "\n    ".join(lines)
