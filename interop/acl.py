"""ACL: a signer we did not write. The client signs its requests with its own code (the C++
client's ClientRPCHook: AccessKey, OnsChannel, Base64 HmacSHA1 over the sorted ext values and
the body); our broker, with aclEnable=true and a plain_acl.yml, must store the sends signed
with the account's secret and refuse those signed with another secret (code 1, RocketMQ's
AclException remark). Every connection comes through the proxy from 127.0.0.1, which no white
address of the file names. Apache 5.3.3 has no plain_acl.yml validator any more: its cluster
(apache_cluster.py `enable_acl`) turns on authentication 2.0 with the same account and says how
that refuses a wrong signature (code 16, `check signature failed.`)."""
import os

from scenario import Verdict, body

SEND_MESSAGE_V2 = 310
SEND_MESSAGE = 10
SYSTEM_ERROR = 1
# How broker-under-test refuses a wrong signature: RocketMQ 4.9's PlainAccessValidator.
PLAIN_ACL_REFUSAL = (SYSTEM_ERROR,
                     "org.apache.rocketmq.acl.common.AclException: Check signature failed")
ACCESS_KEY, SECRET = "interop1", "interop-secret"
TOPIC = "InteropAclTopic"

ACL_FILE = f"""accounts:
  - accessKey: {ACCESS_KEY}
    secretKey: {SECRET}
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {TOPIC}=PUB|SUB
"""


def enable_plain_acl(cluster):
    """broker-under-test: aclEnable with ACL_FILE; returns how a wrong signature is refused
    (answer code, remark prefix)."""
    home = os.path.join(cluster.dir, "rocketmq-home")
    os.makedirs(os.path.join(home, "conf"), exist_ok=True)
    with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
        f.write(ACL_FILE)
    cluster.broker_sets += ["aclEnable=true", f"rocketmqHome={home}"]
    cluster.restart_broker()
    return PLAIN_ACL_REFUSAL


def signed_sends(client, cluster, n=20):
    v = Verdict("acl")
    # A cluster of another broker (apache_cluster.py) says itself how it checks signatures.
    enable = getattr(cluster, "enable_acl", None)
    if enable is None:
        refusal_code, refusal_remark = enable_plain_acl(cluster)
    else:
        refusal_code, refusal_remark = enable(ACCESS_KEY, SECRET, TOPIC)

    good = client.producer(cluster, "AclProducer", credentials=(ACCESS_KEY, SECRET))
    ok, errors = 0, []
    for i in range(n):
        acked, err = good.send("sync", TOPIC, i, body("acl", i % 4, i))
        ok += acked
        if err:
            errors.append(err)
    good.shutdown()
    _, resp_before, _ = cluster.broker_proxy.snapshot()

    bad = client.producer(cluster, "AclProducerBad", credentials=(ACCESS_KEY, "not-the-secret"))
    refused_by_client = 0
    for i in range(3):
        acked, _ = bad.send("sync", TOPIC, i, body("acl-bad", 0, i))
        refused_by_client += not acked
    bad.shutdown()
    _, resp, remarks = cluster.broker_proxy.snapshot()
    refusals = sum(resp[(c, refusal_code)] - resp_before[(c, refusal_code)]
                   for c in (SEND_MESSAGE, SEND_MESSAGE_V2))
    signature_remarks = sum(k for r, k in remarks.items() if r.startswith(refusal_remark))
    v.note(sent=n, send_ok=ok, bad_secret_refused=refused_by_client,
           **{f"code{refusal_code}_answers": refusals}, signature_remarks=signature_remarks)
    if errors:
        v.note(client_error=repr(errors[0][:80]))
    v.require(ok == n, f"{n - ok} signed sends failed, e.g. {errors[:1]}")
    v.require(refused_by_client == 3, "a send signed with the wrong secret was acknowledged")
    v.require(refusals >= 3 and signature_remarks >= 3,
              f"the wrong secret was not answered code {refusal_code} {refusal_remark!r}")
    return v
