"""ACL: a signer we did not write. The client signs its requests with its own code (the C++
client's ClientRPCHook: AccessKey, OnsChannel, Base64 HmacSHA1 over the sorted ext values and
the body); our broker, with aclEnable=true, a plain_acl.yml and brokerVersionProfile=4.9 (its
one profile with ACL 1.0), must store the sends signed with the account's secret and refuse
those signed with another secret (code 1, RocketMQ's AclException remark). Every connection
comes through the proxy from 127.0.0.1, which no white address of the file names."""
import os

from scenario import Verdict, body

SEND_MESSAGE_V2 = 310
SEND_MESSAGE = 10
SYSTEM_ERROR = 1
NO_PERMISSION = 16
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


# Apache 5.3.3 removed ACL 1.0 (RIP-77: `aclEnable` is a BrokerConfig field nothing reads, so
# plain_acl.yml would check nothing). Its ACL 2.0 checks the same client signature
# (AclClientRPCHook: DefaultAuthenticationContextBuilder rebuilds the content with
# AclUtils.combineRequestContent) against a user's password, here a super user made at start
# (AuthenticationMetadataManagerImpl.initUser; users live in a RocksDB under the store's config/).
# A wrong signature is refused with NO_PERMISSION (16) and the remark `check signature failed.`
# (DefaultAuthenticationHandler, AuthenticationPipeline -> AbortProcessException). Every
# unsigned request is refused too ("username cannot be null."): 26 and 28, which `harness serve`
# sends unsigned to check the broker is ready (config read back, runtime info), are whitelisted;
# the harness cannot read these keys back (AuthConfig is not in GET_BROKER_CONFIG's answer).
# Sources: rocketmq-all-5.3.3 auth/.../authentication/, broker/.../auth/pipeline/.
ACL2_SETS = [
    "authenticationEnabled=true",
    "authenticationProvider=org.apache.rocketmq.auth.authentication.provider."
    "DefaultAuthenticationProvider",
    "authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider."
    "LocalAuthenticationMetadataProvider",
    f'initAuthenticationUser={{"username":"{ACCESS_KEY}","password":"{SECRET}"}}',
    "authenticationWhitelist=26,28",
]


def refusal(cluster):
    """(broker keys, code, remark prefix) of a wrongly signed send on this cluster's broker."""
    if getattr(cluster, "kind", "in-tree") == "apache-5.3.3":
        return ACL2_SETS, NO_PERMISSION, "check signature failed"
    home = os.path.join(cluster.dir, "rocketmq-home")
    os.makedirs(os.path.join(home, "conf"), exist_ok=True)
    with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
        f.write(ACL_FILE)
    sets = ["aclEnable=true", f"rocketmqHome={home}"]
    if not hasattr(cluster, "kind"):
        # Our broker has ACL 1.0 on its 4.9 profile only (4.9.8's checks); its default 5.3
        # profile refuses aclEnable=true as 5.3.3 has no ACL 1.0. Apache 4.9.7 needs no such key.
        sets.append("brokerVersionProfile=4.9")
    return (sets, SYSTEM_ERROR,
            "org.apache.rocketmq.acl.common.AclException: Check signature failed")


def signed_sends(client, cluster, n=20):
    v = Verdict("acl")
    sets, code, remark = refusal(cluster)
    cluster.broker_sets += sets
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
    refused = sum(resp[(c, code)] - resp_before[(c, code)] for c in (SEND_MESSAGE, SEND_MESSAGE_V2))
    signature_remarks = sum(k for r, k in remarks.items() if r.startswith(remark))
    v.note(sent=n, send_ok=ok, bad_secret_refused=refused_by_client,
           **{f"code{code}_answers": refused}, signature_remarks=signature_remarks)
    if errors:
        v.note(client_error=repr(errors[0][:80]))
    v.require(ok == n, f"{n - ok} signed sends failed, e.g. {errors[:1]}")
    v.require(refused_by_client == 3, "a send signed with the wrong secret was acknowledged")
    v.require(refused >= 3 and signature_remarks >= 3,
              f"the wrong secret was not answered code {code} {remark!r}")
    return v
