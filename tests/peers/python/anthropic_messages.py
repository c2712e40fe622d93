"""Talks to the bridge's /v1/messages with the official `anthropic` package,
as Claude Code's SDK users would: one streamed message, one whole message.

Usage: anthropic_messages.py --base-url http://127.0.0.1:PORT --api-key TOKEN
       [--model NAME]

Prints one JSON object: what the stream gave (event types, text, the final
message), the whole message and the model list, so the calling test can
assert on it.
"""

import argparse
import json
import sys

import anthropic


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", default="claude-via-bridge")
    args = parser.parse_args()

    client = anthropic.Anthropic(
        base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30.0
    )
    messages = [{"role": "user", "content": "Say hello."}]

    event_types = []
    texts = []
    with client.messages.stream(
        model=args.model, max_tokens=64, system="Be brief.", messages=messages
    ) as stream:
        for event in stream:
            event_types.append(event.type)
            if event.type == "text":
                texts.append(event.text)
        final = stream.get_final_message()

    whole = client.messages.create(model=args.model, max_tokens=64, messages=messages)
    models = [model.model_dump(mode="json") for model in client.models.list()]

    print(
        json.dumps(
            {
                "stream_event_types": event_types,
                "stream_text": "".join(texts),
                "stream_final": final.model_dump(mode="json"),
                "message": whole.model_dump(mode="json"),
                "models": models,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
