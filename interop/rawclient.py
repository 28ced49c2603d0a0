"""A few raw requests the scenarios make themselves (not through the client under test)."""
import json
import socket
import struct

from wire import Frame, read_frame

GET_ROUTEINFO_BY_TOPIC = 105
QUERY_CONSUMER_OFFSET = 14


def call(addr, code, ext, timeout=5.0):
    """One JSON-header request on a fresh connection; returns the answer Frame."""
    header = json.dumps(
        {"code": code, "extFields": ext, "flag": 0, "language": "PYTHON", "opaque": 1,
         "serializeTypeCurrentRPC": "JSON", "version": 401}
    ).encode()
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(struct.pack(">ii", 4 + len(header), len(header)) + header)
        raw = read_frame(s)
    if raw is None:
        raise ConnectionError(f"{addr} closed without answering code {code}")
    return Frame(raw)


def route_code(namesrv, topic):
    try:
        return call(namesrv, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code
    except OSError:
        return -1


def committed_offset(broker, group, topic, queue_id):
    """The broker's committed offset of one queue, or -1 (QUERY_CONSUMER_OFFSET answers 22)."""
    f = call(broker, QUERY_CONSUMER_OFFSET,
             {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)})
    return int(f.ext.get("offset", -1)) if f.code == 0 else -1
