#!/usr/bin/env python3
"""Validates server response bodies against the official API schemas kept as test data.

Usage: validate_api_bodies.py CASES.jsonl
Each line: {"schema": "<api>:<component>", "label": "...", "body": <JSON value>}, where <api> is
  oip     tests/reference/oip/open_inference_rest.yaml (KServe Open Inference Protocol)
  openai  tests/reference/openai/images_api_schemas.json (subset of openai/openai-openapi)
Prints one line per failing case and exits 1 when any fails; 0 when every body validates.
OpenAPI 3.0 `nullable: true` is read as "or null" (JSON Schema has no such keyword).
"""
import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def nullable_to_null(node):
    if isinstance(node, dict):
        out = {k: nullable_to_null(v) for k, v in node.items() if k != "nullable"}
        if node.get("nullable") is True:
            return {"anyOf": [out, {"type": "null"}]}
        return out
    if isinstance(node, list):
        return [nullable_to_null(v) for v in node]
    return node


def load(api):
    if api == "oip":
        with open(os.path.join(HERE, "oip", "open_inference_rest.yaml")) as f:
            doc = yaml.safe_load(f)
    elif api == "openai":
        with open(os.path.join(HERE, "openai", "images_api_schemas.json")) as f:
            doc = json.load(f)
    else:
        raise SystemExit("unknown api '%s'" % api)
    return {"components": nullable_to_null(doc["components"])}


def main():
    docs = {}
    failures = 0
    cases = 0
    with open(sys.argv[1]) as f:
        for line in f:
            if not line.strip():
                continue
            case = json.loads(line)
            api, name = case["schema"].split(":", 1)
            if api not in docs:
                docs[api] = load(api)
            if name not in docs[api]["components"]["schemas"]:
                print("%s: no schema named %s" % (case.get("label", ""), case["schema"]))
                failures += 1
                continue
            schema = dict(docs[api])
            schema["$ref"] = "#/components/schemas/" + name
            cases += 1
            try:
                jsonschema.validate(case["body"], schema, cls=jsonschema.Draft202012Validator)
            except jsonschema.ValidationError as e:
                failures += 1
                print("%s (%s): %s at %s" % (case.get("label", ""), case["schema"], e.message,
                                             "/".join(str(p) for p in e.absolute_path)))
    print("%d bodies checked, %d failed" % (cases, failures))
    return 1 if failures or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
