#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the AES lookup tables of include/ringsteer/aes128.h as C.

The tables are computed here from the definitions in FIPS-197 (the S-box as
the multiplicative inverse in GF(2^8) followed by the affine map, MixColumns
and InvMixColumns as the matrices of section 5) rather than typed in, so that
nobody has to trust a wall of hex. To regenerate, replace the text between
the "BEGIN generated" and "END generated" lines of the header with the
output of this script. The output is laid out as clang-format lays it out,
so regenerating leaves no diff.
"""


def gmul(a, b):
    """Multiply in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1 (FIPS-197 4.2)."""
    p = 0
    while b:
        if b & 1:
            p ^= a
        a <<= 1
        if a & 0x100:
            a ^= 0x11B
        b >>= 1
    return p


def sbox():
    """FIPS-197 5.1.1: inverse in GF(2^8) (0 maps to 0), then the affine map."""
    inv = [0] * 256
    for x in range(1, 256):
        for y in range(1, 256):
            if gmul(x, y) == 1:
                inv[x] = y
                break
    s = []
    for x in range(256):
        b = inv[x]
        r = 0x63
        for i in range(5):
            r ^= ((b << i) | (b >> (8 - i))) & 0xFF
        s.append(r)
    return s


def word(b0, b1, b2, b3):
    return b0 << 24 | b1 << 16 | b2 << 8 | b3


def table(name, ctype, values, per_line, fmt):
    lines = ["static const %s %s[256] = {" % (ctype, name)]
    for i in range(0, len(values), per_line):
        row = ", ".join(fmt % v for v in values[i:i + per_line])
        last = i + per_line >= len(values)
        lines.append("\t" + row + ("};" if last else ","))
    return "\n".join(lines)


def main():
    s = sbox()
    si = [0] * 256
    for x, y in enumerate(s):
        si[y] = x
    # Sanity checks against FIPS-197 Figure 7 before anything is printed.
    assert s[0x00] == 0x63 and s[0x53] == 0xED and s[0xFF] == 0x16
    assert sorted(s) == list(range(256))

    # One MixColumns column per S-box output: (2s, s, s, 3s), row 0 in the
    # high byte, so that the other three columns are byte rotations of it.
    te0 = [word(gmul(v, 2), v, v, gmul(v, 3)) for v in s]
    # Likewise InvMixColumns of the inverse S-box: (14, 9, 13, 11).
    td0 = [word(gmul(v, 14), gmul(v, 9), gmul(v, 13), gmul(v, 11))
           for v in si]

    # The other three columns of each: te0 and td0 rotated right by 8,
    # 16 and 24 bits, as tables (BPF has no rotate instruction).
    def ror(v, n):
        return (v >> n | v << (32 - n)) & 0xFFFFFFFF

    for name, t in (("te", te0), ("td", td0)):
        for i in range(4):
            print(table("rs_aes_%s%d" % (name, i), "__u32",
                        [ror(v, 8 * i) if i else v for v in t], 6,
                        "0x%08x"))
            print()
    print(table("rs_aes_sbox", "__u8", s, 12, "0x%02x"))
    print()
    print(table("rs_aes_inv_sbox", "__u8", si, 12, "0x%02x"))


if __name__ == "__main__":
    main()
