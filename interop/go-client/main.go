// Command interop-go-client runs Apache's Go client (github.com/apache/rocketmq-client-go/v2)
// as a client of the interop scenarios, driven over stdin/stdout by interop/go_client.py with
// the same line protocol as interop/rust-client:
//
//   - `produce NAMESRV GROUP [ACCESS_KEY SECRET_KEY]`: prints `ready`, then reads
//     `MODE TOPIC KEY BODY` lines (MODE `sync`, `oneway` or `orderly`; orderly picks queue KEY
//     modulo the queue count) and answers each with `ok` or `err REASON`; shuts the producer
//     down at end of input. With ACCESS_KEY and SECRET_KEY every request is signed by the
//     client's own ACL hook (primitive.Credentials).
//   - `consume NAMESRV GROUP TOPIC concurrently|orderly`: prints `ready`, then `msg BODY` for
//     every message consumed; shuts the consumer down (committing offsets) at end of input.
//   - `consume NAMESRV GROUP TOPIC retry`: concurrently, answering ConsumeRetryLater to the
//     first delivery of each message (by body) and ConsumeSuccess afterwards; prints
//     `got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY` for every delivery.
//
// The client logs through logrus to stderr (rlog's default) at level warn, or to the file named
// by `-log PATH`; never to stdout, which carries only the protocol. Exit 2 on bad arguments, 1
// when the client cannot start.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// sendTimeout bounds one SendSync call, retries included, as the Java client's 3 s default.
const sendTimeout = 3 * time.Second

// out serialises protocol lines: consumer callbacks run on many goroutines.
var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriter(os.Stdout)}

func answer(format string, args ...interface{}) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(out.w, format+"\n", args...)
	out.w.Flush()
}

func main() {
	logPath := flag.String("log", "", "write the client's log to this file instead of stderr")
	flag.Parse()
	args := flag.Args()
	if os.Getenv("ROCKETMQ_GO_LOG_LEVEL") == "" {
		rlog.SetLogLevel("warn")
	}
	if *logPath != "" {
		if err := rlog.SetOutputPath(*logPath); err != nil {
			fmt.Fprintf(os.Stderr, "Error: log to %s: %v\n", *logPath, err)
			os.Exit(1)
		}
	}
	var err error
	switch {
	case len(args) == 3 && args[0] == "produce":
		err = produce(args[1], args[2], primitive.Credentials{})
	case len(args) == 5 && args[0] == "produce":
		err = produce(args[1], args[2], primitive.Credentials{AccessKey: args[3], SecretKey: args[4]})
	case len(args) == 5 && args[0] == "consume":
		err = consume(args[1], args[2], args[3], args[4])
	default:
		fmt.Fprintln(os.Stderr, "usage: [-log PATH] produce NAMESRV GROUP [ACCESS_KEY SECRET_KEY] | "+
			"consume NAMESRV GROUP TOPIC concurrently|orderly|retry")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

// byKey sends an orderly message to queue KEY modulo the queue count and leaves every other
// message to the client's default selector (round robin). An orderly message carries its key
// in Message.Queue.QueueId, the field the client's own manual selector reads
// (producer/selector.go manualQueueSelector).
type byKey struct{ fallback producer.QueueSelector }

func (s byKey) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, last string) *primitive.MessageQueue {
	if msg.Queue != nil && len(mqs) > 0 {
		return mqs[msg.Queue.QueueId%len(mqs)]
	}
	return s.fallback.Select(msg, mqs, last)
}

func produce(namesrv, group string, creds primitive.Credentials) error {
	opts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName(group),
		// Two retries, as the client's own example (examples/producer/simple/main.go).
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(sendTimeout),
		producer.WithQueueSelector(byKey{fallback: producer.NewRoundRobinQueueSelector()}),
	}
	if !creds.IsEmpty() {
		opts = append(opts, producer.WithCredentials(creds))
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		return fmt.Errorf("new producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("start producer: %w", err)
	}
	answer("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 {
			answer("err bad line %q", line)
			continue
		}
		mode, topic, key, text := f[0], f[1], f[2], f[3]
		msg := primitive.NewMessage(topic, []byte(text))
		msg.WithKeys([]string{key})
		var sendErr error
		switch mode {
		case "sync":
			sendErr = sendSync(p, msg)
		case "orderly":
			k, convErr := strconv.Atoi(key)
			if convErr != nil || k < 0 {
				answer("err orderly key %q is not a queue number", key)
				continue
			}
			msg.Queue = &primitive.MessageQueue{QueueId: k}
			sendErr = sendSync(p, msg)
		case "oneway":
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			sendErr = p.SendOneWay(ctx, msg)
			cancel()
		default:
			answer("err unknown mode %s", mode)
			continue
		}
		if sendErr != nil {
			answer("err %s", strings.ReplaceAll(sendErr.Error(), "\n", " "))
		} else {
			answer("ok")
		}
	}
	return p.Shutdown()
}

func sendSync(p rocketmq.Producer, msg *primitive.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.SendSync(ctx, msg)
	if err != nil {
		return err
	}
	if res.Status != primitive.SendOK {
		return fmt.Errorf("send status %d", res.Status)
	}
	return nil
}

// failFirst answers ConsumeRetryLater to the first delivery of each body.
type failFirst struct {
	sync.Mutex
	seen map[string]bool
}

func (f *failFirst) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	// A retry-later result sends the whole batch back: fail it when any message in it is new
	// (the default ConsumeMessageBatchMaxSize, 1, makes that one message).
	f.Lock()
	fail := false
	for _, m := range msgs {
		if !f.seen[string(m.Body)] {
			fail = true
			f.seen[string(m.Body)] = true
		}
	}
	f.Unlock()
	status := "ok"
	if fail {
		status = "fail"
	}
	for _, m := range msgs {
		answer("got %d %d %s %s", m.ReconsumeTimes, m.CommitLogOffset, status, m.Body)
	}
	if fail {
		return consumer.ConsumeRetryLater, nil
	}
	return consumer.ConsumeSuccess, nil
}

func printBodies(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	for _, m := range msgs {
		answer("msg %s", m.Body)
	}
	return consumer.ConsumeSuccess, nil
}

func consume(namesrv, group, topic, mode string) error {
	listener := printBodies
	opts := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
	switch mode {
	case "concurrently":
	case "orderly":
		opts = append(opts, consumer.WithConsumerOrder(true))
	case "retry":
		listener = (&failFirst{seen: map[string]bool{}}).consume
	default:
		return fmt.Errorf("unknown consume mode %q", mode)
	}
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		return fmt.Errorf("new push consumer: %w", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, listener); err != nil {
		return fmt.Errorf("subscribe %s: %w", topic, err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start push consumer: %w", err)
	}
	answer("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
	}
	return c.Shutdown()
}
