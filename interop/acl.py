"""ACL: a signer we did not write. The client signs its requests with its own code (the C++
client's ClientRPCHook: AccessKey, OnsChannel, Base64 HmacSHA1 over the sorted ext values and
the body); our broker, with aclEnable=true and a plain_acl.yml, must store the sends signed
with the account's secret and refuse those signed with another secret (code 1, RocketMQ's
AclException remark). Every connection comes through the proxy from 127.0.0.1, which no white
address of the file names."""
import os

from scenario import Verdict, body

SEND_MESSAGE_V2 = 310
SEND_MESSAGE = 10
SYSTEM_ERROR = 1
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


def signed_sends(client, cluster, n=20):
    v = Verdict("acl")
    home = os.path.join(cluster.dir, "rocketmq-home")
    os.makedirs(os.path.join(home, "conf"), exist_ok=True)
    with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
        f.write(ACL_FILE)
    cluster.broker_sets += ["aclEnable=true", f"rocketmqHome={home}"]
    cluster.restart_broker()

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
    code1 = sum(resp[(c, SYSTEM_ERROR)] - resp_before[(c, SYSTEM_ERROR)]
                for c in (SEND_MESSAGE, SEND_MESSAGE_V2))
    signature_remarks = sum(
        k for r, k in remarks.items()
        if r.startswith("org.apache.rocketmq.acl.common.AclException: Check signature failed")
    )
    v.note(sent=n, send_ok=ok, bad_secret_refused=refused_by_client, code1_answers=code1,
           signature_remarks=signature_remarks)
    if errors:
        v.note(client_error=repr(errors[0][:80]))
    v.require(ok == n, f"{n - ok} signed sends failed, e.g. {errors[:1]}")
    v.require(refused_by_client == 3, "a send signed with the wrong secret was acknowledged")
    v.require(code1 >= 3 and signature_remarks >= 3,
              "the wrong secret was not answered code 1 'Check signature failed'")
    return v
