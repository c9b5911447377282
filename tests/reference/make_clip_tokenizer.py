#!/usr/bin/python3
"""Builds a Hugging Face style CLIP tokenizer folder from the original merges file.

Usage: make_clip_tokenizer.py BPE_GZ OUT_DIR [--pad TOKEN] [--max-length N] [--num-merges N]

Writes OUT_DIR/vocab.json, merges.txt and tokenizer_config.json. The vocabulary is derived the
way the original CLIP code does it: the 256 byte symbols, the same with "</w>", one symbol per
merge for the first 48 894 merges, then <|startoftext|> and <|endoftext|> (49 408 entries).
--num-merges keeps only the first N merges (a small but valid tokenizer for error-path tests).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from clip_vocab import NUM_MERGES, load_clip_vocab  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bpe_gz")
    ap.add_argument("out_dir")
    ap.add_argument("--pad", default="<|endoftext|>")
    ap.add_argument("--max-length", type=int, default=77)
    ap.add_argument("--num-merges", type=int, default=NUM_MERGES)
    args = ap.parse_args()
    vocab, merges = load_clip_vocab(args.bpe_gz, args.num_merges)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(args.out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.write("\n".join(merges) + "\n")
    config = {
        "bos_token": {"content": "<|startoftext|>", "lstrip": False, "normalized": True,
                      "rstrip": False, "single_word": False},
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "pad_token": args.pad,
        "model_max_length": args.max_length,
        "tokenizer_class": "CLIPTokenizer",
    }
    with open(os.path.join(args.out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
