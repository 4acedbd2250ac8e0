// CAST's element conversion between packed buffers (convert.py): each invocation writes one
// whole 4-byte word of the destination (the 4 / DST_BYTES elements in it), so no two
// invocations share a word. Every rule is integer arithmetic on the elements' bits, but the
// truncation of an in-range float to an integer (exact by WGSL's conversion rules):
// to a float type, round to nearest, ties to even, an infinity past the range, a NaN the
// type's canonical one (0x7FFFFFFF, 0x7FFF); float to integer, truncation toward zero,
// saturation, NaN 0; integer to integer, the low bits (wrapping).
// Type codes: 0 float32, 1 float16, 2 int32, 3 uint32, 4 int16, 5 uint16, 6 int8, 7 uint8.

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

struct Header {
    count: u32,     // elements
    grid_x: u32,    // workgroups along x
    src_word: u32,  // where the packed source starts in its buffer, in words
    dst_word: u32,  // where the packed destination starts
}
@group(0) @binding(2) var<uniform> header: Header;

override SRC: u32;
override DST: u32;

fn bytes_of(code: u32) -> u32 {
    if (code <= 3u) {
        return select(4u, 2u, code == 1u);
    }
    return select(1u, 2u, code <= 5u);
}

fn load_bits(i: u32) -> u32 {
    let size = bytes_of(SRC);
    let at = header.src_word;
    if (size == 4u) {
        return src[at + i];
    }
    if (size == 2u) {
        return (src[at + (i >> 1u)] >> (16u * (i & 1u))) & 0xffffu;
    }
    return (src[at + (i >> 2u)] >> (8u * (i & 3u))) & 0xffu;
}

fn is_float(code: u32) -> bool {
    return code <= 1u;
}

fn is_signed(code: u32) -> bool {
    return code == 2u || code == 4u || code == 6u;
}

// float16 bits to float32 bits, exactly (NaN payloads kept; made canonical later)
fn f16_to_f32(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 31u) {
        return sign | 0x7f800000u | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        let shift = 10u - firstLeadingBit(m);  // a subnormal: normalised
        return sign | ((113u - shift) << 23u) | (((m << shift) & 0x3ffu) << 13u);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}

// float32 bits to float16 bits, ties to even
fn f32_to_f16(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let e = (x >> 23u) & 0xffu;
    let m = x & 0x7fffffu;
    if (e == 255u) {
        return select(sign | 0x7c00u, 0x7fffu, m != 0u);
    }
    let ue = i32(e) - 127;
    if (ue > 15) {
        return sign | 0x7c00u;
    }
    if (ue >= -14) {
        var hm = m >> 13u;
        var he = u32(ue + 15);
        let rest = m & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (hm & 1u) == 1u)) {
            hm = hm + 1u;
            if (hm == 0x400u) {
                hm = 0u;
                he = he + 1u;
            }
        }
        if (he >= 31u) {
            return sign | 0x7c00u;
        }
        return sign | (he << 10u) | hm;
    }
    if (e == 0u) {
        return sign;  // float32 subnormals lie far below float16's half unit
    }
    let full = m | 0x800000u;
    let drop = u32(-(ue + 1));  // bits below float16's unit of 2^-24
    if (drop > 24u) {
        return sign;
    }
    var q = full >> drop;
    let rest = full & ((1u << drop) - 1u);
    let half = 1u << (drop - 1u);
    if (rest > half || (rest == half && (q & 1u) == 1u)) {
        q = q + 1u;
    }
    return sign | q;
}

// an unsigned magnitude as float32 bits, ties to even
fn magnitude_to_f32(m: u32) -> u32 {
    if (m < 0x1000000u) {
        return bitcast<u32>(f32(m));  // exact below 2^24
    }
    let lead = firstLeadingBit(m);
    let shift = lead - 23u;
    var mant = m >> shift;
    let rest = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var e = lead + 127u;
    if (rest > half || (rest == half && (mant & 1u) == 1u)) {
        mant = mant + 1u;
        if (mant == 0x1000000u) {
            mant = mant >> 1u;
            e = e + 1u;
        }
    }
    return (e << 23u) | (mant & 0x7fffffu);
}

// an integer's value (its bits sign-extended where signed) as float32 bits
fn int_to_f32(v: u32, from_signed: bool) -> u32 {
    if (from_signed && (v & 0x80000000u) != 0u) {
        return 0x80000000u | magnitude_to_f32((~v) + 1u);
    }
    return magnitude_to_f32(v);
}

// float32 bits to an integer type's bits: truncated toward zero, saturated, NaN 0
fn f32_to_int(x: u32, code: u32) -> u32 {
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0u) {
        return 0u;
    }
    let f = bitcast<f32>(x);
    if (code == 2u) {
        if (f >= 2147483648.0) {
            return 0x7fffffffu;
        }
        if (f < -2147483648.0) {
            return 0x80000000u;
        }
        return bitcast<u32>(i32(f));
    }
    if (code == 3u) {
        if (f >= 4294967296.0) {
            return 0xffffffffu;
        }
        if (f <= -1.0) {
            return 0u;
        }
        return u32(max(f, 0.0));
    }
    var low = -32768.0;
    var high = 32768.0;
    if (code == 5u) {
        low = 0.0;
        high = 65536.0;
    } else if (code == 6u) {
        low = -128.0;
        high = 128.0;
    } else if (code == 7u) {
        low = 0.0;
        high = 256.0;
    }
    if (f >= high) {
        return bitcast<u32>(i32(high) - 1);
    }
    if (f <= low - 1.0) {
        return bitcast<u32>(i32(low));
    }
    return bitcast<u32>(i32(f));  // (in (low - 1, high): truncation lands in range)
}

fn convert(bits: u32) -> u32 {
    if (is_float(SRC)) {
        let x = select(bits, f16_to_f32(bits), SRC == 1u);
        let nan = (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0u;
        if (DST == 0u) {
            return select(x, 0x7fffffffu, nan);
        }
        if (DST == 1u) {
            return f32_to_f16(x);
        }
        return f32_to_int(x, DST);
    }
    var v = bits;  // the integer, sign-extended to 32 bits where signed
    let size = bytes_of(SRC);
    if (is_signed(SRC) && size < 4u) {
        let top = 32u - 8u * size;
        v = bitcast<u32>(bitcast<i32>(bits << top) >> top);
    }
    if (DST == 0u) {
        return int_to_f32(v, is_signed(SRC));
    }
    if (DST == 1u) {
        return f32_to_f16(int_to_f32(v, is_signed(SRC)));
    }
    return v;  // (the store keeps its low bytes: wrapping)
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let word = (wg.y * header.grid_x + wg.x) * 256u + lid;
    let size = bytes_of(DST);
    let per_word = 4u / size;
    let first = word * per_word;
    if (first >= header.count) {
        return;
    }
    var made = 0u;
    let mask = select((1u << (8u * size)) - 1u, 0xffffffffu, size == 4u);
    for (var k = 0u; k < per_word; k++) {
        let i = first + k;
        if (i < header.count) {
            made = made | ((convert(load_bits(i)) & mask) << (8u * size * k));
        }
    }
    dst[header.dst_word + word] = made;
}
