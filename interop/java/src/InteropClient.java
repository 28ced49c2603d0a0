// Our interop driver for Apache RocketMQ's Java client (rocketmq-client 4.9.x and 5.3.x: the same
// source compiles against both, see interop/java/<version>/pom.xml). interop/java_client.py runs
// one JVM per producer or consumer and speaks this line protocol over stdin/stdout, the same as
// interop/rust-client:
//
//   produce NAMESRV GROUP [ACCESS_KEY SECRET]
//     prints `ready`; then per input line `MODE TOPIC KEY BODY` (MODE sync|oneway|orderly) one
//     answer line, `ok` or `err REASON`; shuts the producer down at end of input.
//   consume NAMESRV GROUP TOPIC concurrently|orderly|retry
//     prints `ready` once started, then `msg BODY` per delivery; in `retry` mode the listener
//     answers RECONSUME_LATER to the first delivery of each body and prints
//     `got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY` instead. Shuts down at end of input
//     (the client persists its offsets on shutdown).
//
// The client's own logging goes to files under -Drocketmq.client.logRoot; anything a library
// prints on System.out is moved to stderr so that stdout carries the protocol only.
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

public final class InteropClient {
    /** The protocol stream: the real stdout, flushed per line (println is synchronized). */
    private static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    /** Queue = key mod queues: the scenario's `orderly by key`. */
    private static final MessageQueueSelector BY_KEY = (List<MessageQueue> mqs, Message msg, Object arg) ->
            mqs.get((int) Math.floorMod((Long) arg, (long) mqs.size()));

    private InteropClient() {}

    public static void main(String[] args) throws Exception {
        System.setOut(System.err);
        int rc;
        try {
            if (args.length >= 3 && args[0].equals("produce")) {
                rc = produce(args);
            } else if (args.length == 5 && args[0].equals("consume")) {
                rc = consume(args[1], args[2], args[3], args[4]);
            } else {
                System.err.println("usage: produce NAMESRV GROUP [ACCESS_KEY SECRET] | "
                        + "consume NAMESRV GROUP TOPIC concurrently|orderly|retry");
                rc = 2;
            }
        } catch (Exception e) {
            System.err.println("Error: " + e);
            OUT.println("error " + oneLine(e));
            rc = 1;
        }
        // The client leaves non-daemon threads behind in some versions: end the JVM here.
        System.exit(rc);
    }

    private static int produce(String[] args) throws Exception {
        RPCHook hook = null;
        if (args.length == 5) {
            // The client's own ACL signer: AccessKey, Signature (HmacSHA1 over the sorted ext
            // fields and the body) added to every request's ext fields.
            hook = new AclClientRPCHook(new SessionCredentials(args[3], args[4]));
        } else if (args.length != 3) {
            throw new IllegalArgumentException("produce NAMESRV GROUP [ACCESS_KEY SECRET]");
        }
        DefaultMQProducer p = new DefaultMQProducer(args[2], hook);
        p.setNamesrvAddr(args[1]);
        p.start();
        OUT.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ", 4);
            if (f.length != 4) {
                OUT.println("err bad line " + line);
                continue;
            }
            OUT.println(send(p, f[0], f[1], f[2], f[3]));
        }
        p.shutdown();
        return 0;
    }

    private static String send(DefaultMQProducer p, String mode, String topic, String key, String body) {
        Message m = new Message(topic, "*", key, body.getBytes(StandardCharsets.UTF_8));
        try {
            SendResult r;
            switch (mode) {
                case "sync":
                    r = p.send(m);
                    break;
                case "oneway":
                    p.sendOneway(m);
                    return "ok";
                case "orderly":
                    r = p.send(m, BY_KEY, Long.parseLong(key));
                    break;
                default:
                    return "err unknown mode " + mode;
            }
            return r.getSendStatus() == SendStatus.SEND_OK ? "ok" : "err status " + r.getSendStatus();
        } catch (Exception e) {
            // MQBrokerException carries the broker's code (2 SYSTEM_BUSY, 1 for ACL refusals).
            return "err " + oneLine(e);
        }
    }

    private static int consume(String namesrv, String group, String topic, String mode) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        switch (mode) {
            case "concurrently":
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        OUT.println("msg " + text(m));
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                break;
            case "orderly":
                c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        OUT.println("msg " + text(m));
                    }
                    return ConsumeOrderlyStatus.SUCCESS;
                });
                break;
            case "retry":
                // One message per call (consumeMessageBatchMaxSize 1, the default), so the status
                // answers for exactly the message printed.
                Set<String> seen = ConcurrentHashMap.newKeySet();
                c.setConsumeMessageBatchMaxSize(1);
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    boolean fail = false;
                    for (MessageExt m : msgs) {
                        String b = text(m);
                        boolean first = seen.add(b);
                        fail |= first;
                        OUT.println("got " + m.getReconsumeTimes() + " " + m.getCommitLogOffset() + " "
                                + (first ? "fail" : "ok") + " " + b);
                    }
                    return fail ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                break;
            default:
                throw new IllegalArgumentException("unknown consume mode " + mode);
        }
        c.start();
        OUT.println("ready");
        // Runs until the driver closes stdin.
        while (System.in.read() >= 0) {
            // Input carries no commands for a consumer.
        }
        c.shutdown();
        return 0;
    }

    private static String text(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    private static String oneLine(Throwable e) {
        return String.valueOf(e).replace('\n', ' ').replace('\r', ' ');
    }
}
