#!/usr/bin/python3
"""Independent reference CLIP tokenizer (test oracle for src/sd/tokenizer.cc).

Usage: clip_tokenize.py BPE_GZ [--max-length 77] [--pad-id 49407] < prompts.json > ids.json

Reads a JSON list of prompts on stdin and prints a JSON list of padded id lists. It follows the
original CLIP simple tokenizer: the vocabulary is built from the merges file itself, the text is
whitespace-collapsed and lower-cased with Python's str methods, pre-tokenised with a hand-written
scanner equivalent to the CLIP pattern (the `regex` module is not available here), and BPE uses
the classic "merge the best-ranked pair everywhere, repeat" loop over strings. Only the standard
library is used, so it shares no code with the C++ implementation; the vocabulary convention (byte
table and id order) comes from tools/clip_vocab.py, shared with the generators.
"""
import argparse
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from clip_vocab import SPECIALS, bytes_to_unicode, load_clip_vocab  # noqa: E402

CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")



def char_class(c):
    if c.isspace():
        return "space"
    cat = unicodedata.category(c)
    if cat.startswith("L"):
        return "letter"
    if cat.startswith("N"):
        return "number"
    return "other"


def pre_tokenize(text):
    words = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        special = next((s for s in SPECIALS if text.startswith(s, i)), None)
        if special:
            words.append(special)
            i += len(special)
            continue
        contraction = next((s for s in CONTRACTIONS if text.startswith(s, i)), None)
        if contraction:
            words.append(contraction)
            i += len(contraction)
            continue
        cls = char_class(c)
        if cls == "number":
            words.append(c)
            i += 1
            continue
        j = i + 1
        while j < n and char_class(text[j]) == cls:
            j += 1
        words.append(text[i:j])
        i = j
    return words


class Reference:
    def __init__(self, bpe_gz):
        self.encoder, merges = load_clip_vocab(bpe_gz)
        merges = [tuple(m.split()) for m in merges]
        self.byte_encoder = bytes_to_unicode()
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.cache = {s: s for s in SPECIALS}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token[:-1]) + [token[-1] + "</w>"]
        while len(word) > 1:
            pairs = {(word[k], word[k + 1]) for k in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            merged = []
            k = 0
            while k < len(word):
                if k < len(word) - 1 and word[k] == first and word[k + 1] == second:
                    merged.append(first + second)
                    k += 2
                else:
                    merged.append(word[k])
                    k += 1
            word = merged
        result = " ".join(word)
        self.cache[token] = result
        return result

    def encode(self, text):
        text = unicodedata.normalize("NFC", text)
        text = " ".join(text.split()).lower()
        ids = []
        for w in pre_tokenize(text):
            if w in SPECIALS:
                ids.append(self.encoder[w])
                continue
            mapped = "".join(self.byte_encoder[b] for b in w.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(mapped).split(" "))
        return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bpe_gz")
    ap.add_argument("--max-length", type=int, default=77)
    ap.add_argument("--pad-id", type=int, default=49407)
    args = ap.parse_args()
    ref = Reference(args.bpe_gz)
    out = []
    for prompt in json.load(sys.stdin):
        body = ref.encode(prompt)[:args.max_length - 2]
        ids = [49406] + body + [49407]
        ids += [args.pad_id] * (args.max_length - len(ids))
        out.append(ids)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
