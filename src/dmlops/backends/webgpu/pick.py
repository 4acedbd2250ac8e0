"""The WGSL body of a pick kernel (kernels/pick.wgsl): every R-th element of a row picked
out of R whole source units into one destination unit (a 16-byte vector, or for `pickw`
kernels of 1- and 2-byte elements a 4-byte word), with every lane, shift and mask a
constant of the kernel (element size, R, phase, direction and unit)."""

from __future__ import annotations

__all__ = ["pick_body", "parse_pick"]

_LANES = "xyzw"
# reorder.wgsl's function that puts a backwards unit's elements in order, per element size
_IN_ORDER = {1: "reverse_bytes", 2: "reverse_halves", 4: "reverse_words", 8: "reverse_pairs"}
_IN_ORDER_WORD = {1: "reverse_word_bytes", 2: "reverse_word_halves"}


def parse_pick(kernel: str) -> tuple[int, int, int, bool, int]:
    """(element bytes, stride, phase, backwards, unit bytes) of a kernel named
    pick<es>x<r>p<phase>[r] (16-byte units) or pickw<es>x<r>p<phase>[r] (4-byte words)."""
    word = kernel.startswith("pickw")
    es, rest = kernel[5 if word else 4 :].split("x")
    backwards = rest.endswith("r")
    r, phase = rest.rstrip("r").split("p")
    return int(es), int(r), int(phase), backwards, 4 if word else 16


def pick_body(es: int, r: int, phase: int, backwards: bool, unit: int = 16) -> str:
    """copy_at's statements: the R loads, then the destination unit, word by word."""
    lanes = unit // 4  # words in a unit

    def lane(word: int) -> str:
        return f"v{word}" if lanes == 1 else f"v{word // 4}.{_LANES[word % 4]}"

    lines = [f"let v{k} = load_src(s + {k}u);" for k in range(r)]
    words: list[list[str]] = [[] for _ in range(lanes)]
    for j in range(unit // es):  # each destination element
        source = (j * r + phase) * es  # its byte in the R units read
        if es >= 4:
            for t in range(es // 4):
                words[j * es // 4 + t].append(lane(source // 4 + t))
            continue
        word, within = divmod(source, 4)
        mask = (1 << (8 * es)) - 1
        part = f"(({lane(word)} >> {8 * within}u) & {mask:#x}u)"
        at = (j * es) % 4
        words[j * es // 4].append(part if at == 0 else f"({part} << {8 * at}u)")
    made = [" | ".join(parts) for parts in words]
    value = made[0] if lanes == 1 else f"vec4<u32>({', '.join(made)})"
    if backwards:
        value = f"{(_IN_ORDER_WORD if lanes == 1 else _IN_ORDER)[es]}({value})"
    lines.append(f"dst[(*w).dst] = {value};")
    return "\n    ".join(lines)
