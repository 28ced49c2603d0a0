"""The C++ client adapter: Apache's rocketmq-client-cpp through the PyPI wheel `rocketmq`
0.4.4 (its manylinux wheel bundles librocketmq.so). One C++ client instance per producer or
consumer (distinct instance names), all in this process."""
import itertools

from rocketmq.client import Message, Producer, PushConsumer, SendStatus, _CConsumeStatus
from rocketmq.client import RecvMessage, _to_bytes, dll, ffi_check

_instances = itertools.count(1)


def _message(topic, key, text):
    m = Message(topic)
    m.set_keys(str(key))
    m.set_body(text)
    return m


class CppProducer:
    def __init__(self, cluster, group, credentials=None):
        self.p = Producer(group, timeout=5000)
        self.p.set_namesrv_addr(cluster.namesrv_addr())
        if credentials:
            # The C++ client's own ACL signer (ClientRPCHook); the channel is signed like any
            # other ext field.
            self.p.set_session_credentials(credentials[0], credentials[1], "LOCAL")
        self.p.start()

    def send(self, mode, topic, key, text):
        """(acknowledged, error text): sync and orderly wait for SEND_OK; oneway is sent."""
        try:
            m = _message(topic, key, text)
            if mode == "sync":
                return self.p.send_sync(m).status == SendStatus.OK, None
            if mode == "oneway":
                self.p.send_oneway(m)
                return True, None
            return self.p.send_orderly(m, int(key)).status == SendStatus.OK, None
        except Exception as e:  # noqa: BLE001 (the client's way to report a failed send)
            return False, str(e)

    def shutdown(self):
        self.p.shutdown()


class CppConsumer:
    def __init__(self, cluster, group, topic, ledger, orderly, fail_first):
        self.c = PushConsumer(group, orderly=orderly)
        self.c.set_namesrv_addr(cluster.namesrv_addr())
        self.c.set_thread_count(4)
        self.c.set_instance_name(f"interop-{next(_instances)}")
        if fail_first:
            self._subscribe_failing(topic, ledger)
        else:
            self.c.subscribe(topic, lambda m: ledger.record(m.body))
        self.c.start()

    def _subscribe_failing(self, topic, ledger):
        """A listener that answers RECONSUME_LATER to the first delivery of each message.
        PushConsumer.subscribe (0.4.4) cannot: it ignores the callback's return value and
        re-raises a callback's exception out of the ctypes callback, so the C++ client gets
        no status from Python. Its own two calls are made here with a callback that returns
        the C status itself."""

        def on_message(_consumer, handle):
            m = RecvMessage(handle)
            fail = ledger.deliver(m.body, m.reconsume_times, m.commit_log_offset)
            status = _CConsumeStatus.RECONSUME_LATER if fail else _CConsumeStatus.CONSUME_SUCCESS
            return status.value

        ffi_check(dll.Subscribe(self.c._handle, _to_bytes(topic), _to_bytes("*")))
        self.c._register_callback(on_message)

    def shutdown(self):
        self.c.shutdown()


class CppClient:
    name = "cpp"

    def producer(self, cluster, group, credentials=None):
        return CppProducer(cluster, group, credentials)

    def consumer(self, cluster, group, topic, ledger, orderly=False, fail_first=False):
        return CppConsumer(cluster, group, topic, ledger, orderly, fail_first)
