"""CLIP BPE vocabulary shared by the test and tiny-model generators.

The GPT-2/CLIP byte-to-unicode table and the vocabulary order (256 byte symbols, the same with
"</w>", one entry per merge, then the two special tokens) are a fixed convention of CLIP's
tokenizer; the generators that write vocab.json/merges.txt and the independent reference
tokenizer (tests/reference/clip_tokenize.py) all need the same table, so it lives here once.
"""

import gzip

# merges.txt of CLIP ViT-L/14 has 49152 - 256 - 2 merges after its version line.
NUM_MERGES = 49152 - 256 - 2
SPECIALS = ("<|startoftext|>", "<|endoftext|>")


def bytes_to_unicode():
    """Maps every byte 0..255 to a printable unicode symbol, in CLIP's canonical order."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) +
          list(range(ord("\xae"), ord("\xff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def load_clip_vocab(bpe_gz, num_merges=NUM_MERGES):
    """Reads CLIP's gzipped merges file; returns (vocab {token: id}, merges list)."""
    with gzip.open(bpe_gz, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = [m for m in lines[1:min(num_merges, NUM_MERGES) + 1] if m]
    symbols = list(bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols]
    vocab += ["".join(m.split(" ")) for m in merges]
    vocab += list(SPECIALS)
    return {tok: i for i, tok in enumerate(vocab)}, merges
