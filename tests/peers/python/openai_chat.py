"""Talks to the bridge's OpenAI facade with the official `openai` package.

Usage: openai_chat.py BASE_URL API_KEY [MODEL]

BASE_URL includes `/v1` (http://127.0.0.1:PORT/v1). Asks four things:
a streamed completion with usage, a whole completion, a request the facade
must refuse, and a stream the upstream cuts; prints one JSON object with
what came back, for the Rust test that runs this script to check.
"""

import json
import sys

import openai
from openai import OpenAI


def main() -> None:
    base_url, api_key = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "mock-model"
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=30)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello from python"},
    ]

    stream = client.chat.completions.create(
        model=model,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
    )
    deltas, finish_reason, usage, ids = [], None, None, set()
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            if choice.delta.content:
                deltas.append(choice.delta.content)
            if choice.finish_reason:
                finish_reason = choice.finish_reason

    completion = client.chat.completions.create(model=model, messages=messages)

    try:
        client.chat.completions.create(model=model, messages=[])
        refused = None
    except openai.APIStatusError as err:
        refused = {"status": err.status_code, "code": err.code, "param": err.param}

    cut_deltas, cut = [], None
    try:
        for chunk in client.chat.completions.create(model=model, messages=messages, stream=True):
            for choice in chunk.choices:
                if choice.delta.content:
                    cut_deltas.append(choice.delta.content)
    except openai.APIError as err:
        cut = {"code": (err.body or {}).get("code"), "text": "".join(cut_deltas)}

    print(json.dumps({
        "stream": {
            "text": "".join(deltas),
            "deltas": len(deltas),
            "finish_reason": finish_reason,
            "usage": usage,
            "ids": len(ids),
        },
        "complete": {
            "object": completion.object,
            "text": completion.choices[0].message.content,
            "finish_reason": completion.choices[0].finish_reason,
            "model": completion.model,
        },
        "refused": refused,
        "cut": cut,
    }))


if __name__ == "__main__":
    main()
