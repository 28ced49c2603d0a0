"""Writes the request bodies a proxy kept into the fixture corpus: one file per distinct body,
named after the request code, as received on the wire (no reformatting)."""
import os

NAMES = {34: "heart_beat", 35: "unregister_client", 41: "lock_batch_mq", 42: "unlock_batch_mq"}


def write_bodies(proxy, folder, scenario):
    os.makedirs(folder, exist_ok=True)
    with proxy.lock:
        captured = {code: list(kept) for code, kept in proxy.captured.items()}
    for code, kept in sorted(captured.items()):
        for i, (_frame, body) in enumerate(kept):
            if not body:
                continue
            name = f"{NAMES.get(code, code)}-{scenario}-{i}.json"
            with open(os.path.join(folder, name), "wb") as f:
                f.write(body)
