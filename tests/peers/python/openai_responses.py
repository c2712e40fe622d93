"""Talks to the bridge's /v1/responses with the official `openai` package:
one streamed response, one whole response kept in the store, and one that
continues it with previous_response_id.

Usage: openai_responses.py --base-url http://127.0.0.1:PORT/v1 --api-key TOKEN

Prints one JSON object for the calling test to assert on.
"""

import argparse
import json
import sys

import openai


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    args = parser.parse_args()

    client = openai.OpenAI(
        base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30.0
    )
    texts = []
    final_status = None
    with client.responses.stream(model="gpt-test", input="Say hello", store=False) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                texts.append(event.delta)
        final_status = stream.get_final_response().status

    whole = client.responses.create(model="gpt-test", input="Once more", store=True)
    continued = client.responses.create(
        model="gpt-test", input="And again", previous_response_id=whole.id
    )

    print(
        json.dumps(
            {
                "stream_text": "".join(texts),
                "stream_final_status": final_status,
                "whole_id": whole.id,
                "whole_text": whole.output_text,
                "continued_previous": continued.previous_response_id,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
