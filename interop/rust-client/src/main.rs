//! The `rocketmq-client-rust` crate (1.0.0) as the interop scenarios' second client, driven
//! over stdin/stdout by `interop/rust_client.py`:
//!
//! - `produce NAMESRV GROUP`: reads `MODE TOPIC KEY BODY` lines (MODE `sync`, `oneway` or
//!   `orderly`, the queue chosen as KEY modulo the queue count) and answers each with `ok` or
//!   `err REASON`; shuts the producer down at end of input.
//! - `consume NAMESRV GROUP TOPIC concurrently|orderly`: prints `msg BODY` for every message
//!   consumed; shuts the consumer down at end of input.
//! - `consume NAMESRV GROUP TOPIC retry`: concurrently, answering RECONSUME_LATER to the first
//!   delivery of each message (by body) and CONSUME_SUCCESS afterwards; prints
//!   `got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY` for every delivery.

use std::{
    collections::HashSet,
    io::{BufRead, Write},
    sync::{Arc, Mutex},
};

use rocketmq_client_rust::{
    ClientError, ClientResult, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeOrderlyContext, ConsumeOrderlyStatus, DefaultMQProducer,
    DefaultMQPushConsumer, MQPushConsumer, MessageListenerConcurrently, MessageListenerOrderly,
};
use rocketmq_model::common::{
    consumer::consume_from_where::ConsumeFromWhere,
    message::{message_ext::MessageExt, message_single::Message},
};
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

/// Every send's budget, as the Java client's default.
const SEND_TIMEOUT_MS: u64 = 3000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["produce", namesrv, group] => runtime.block_on(async {
            let rt = Runtime::start("produce")?;
            let r = produce(rt.client.clone(), namesrv, group).await;
            rt.shutdown().await;
            r
        }),
        ["consume", namesrv, group, topic, mode] => runtime.block_on(async {
            let rt = Runtime::start("consume")?;
            let r = consume(rt.client.clone(), namesrv, group, topic, mode).await;
            rt.shutdown().await;
            r
        }),
        _ => {
            eprintln!(
                "usage: produce NAMESRV GROUP | consume NAMESRV GROUP TOPIC concurrently|orderly|retry"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
}

/// The client runtime 1.0.0 asks for: a runtime owner, telemetry, and the shared client pool.
struct Runtime {
    owner: RuntimeOwner,
    telemetry: rocketmq_observability::TelemetryRuntimeGuard,
    client: Arc<ClientRuntime>,
}

impl Runtime {
    fn start(scope: &str) -> ClientResult<Runtime> {
        let owner = RuntimeOwner::plan(RuntimeConfig {
            thread_name: format!("interop-{scope}"),
            ..Default::default()
        })
        .map_err(|e| ClientError::internal("plan the client runtime", e))?
        .build()
        .map_err(|e| ClientError::internal("build the client runtime", e))?;
        let telemetry = rocketmq_observability::install_global(
            &rocketmq_observability::TelemetryBootstrapConfig::default(),
        )
        .map_err(|e| ClientError::internal("initialize telemetry", e))?;
        let client = ClientRuntime::try_new(
            owner.root_context().component("client"),
            ClientRuntimeConfig::default(),
            telemetry.handle(),
        )?;
        Ok(Runtime {
            owner,
            telemetry,
            client,
        })
    }

    async fn shutdown(self) {
        let _ = self.client.shutdown().await;
        let _ = self.owner.shutdown_tasks().await;
        let _ = self.owner.shutdown_background();
        let _ = self.telemetry.shutdown();
    }
}

/// stdin lines, read on a blocking thread and handed over through a bounded channel.
fn stdin_lines() -> tokio::sync::mpsc::Receiver<String> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        })
        .expect("stdin thread");
    rx
}

fn answer(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn produce(client: Arc<ClientRuntime>, namesrv: &str, group: &str) -> ClientResult<()> {
    let mut producer = DefaultMQProducer::builder(client)
        .producer_group(group.to_string())
        .name_server_addr(namesrv.to_string())
        .build();
    producer.start().await?;
    answer("ready");
    let mut lines = stdin_lines();
    while let Some(line) = lines.recv().await {
        let mut it = line.splitn(4, ' ');
        let (Some(mode), Some(topic), Some(key), Some(body)) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            answer(&format!("err bad line {line:?}"));
            continue;
        };
        let message = Message::builder()
            .topic(topic)
            .keys(vec![key.to_string()])
            .body(body.as_bytes().to_vec())
            .build_unchecked();
        let result = match mode {
            "sync" => producer
                .send_with_timeout(message, SEND_TIMEOUT_MS)
                .await
                .map(|r| r.is_some()),
            "oneway" => producer.send_oneway(message).await.map(|()| true),
            "orderly" => {
                let k: usize = key.parse().unwrap_or(0);
                producer
                    .send_with_selector(
                        message,
                        |mqs, _msg, k: &usize| mqs.get(k % mqs.len().max(1)).cloned(),
                        k,
                    )
                    .await
                    .map(|r| r.is_some())
            }
            other => {
                answer(&format!("err unknown mode {other}"));
                continue;
            }
        };
        match result {
            Ok(true) => answer("ok"),
            Ok(false) => answer("err no send result"),
            Err(e) => answer(&format!("err {}", e.to_string().replace('\n', " "))),
        }
    }
    producer.shutdown().await;
    Ok(())
}

fn print_bodies(msgs: &[&MessageExt]) {
    let mut out = std::io::stdout().lock();
    for m in msgs {
        let body = m.body().unwrap_or_default();
        let _ = writeln!(out, "msg {}", String::from_utf8_lossy(&body));
    }
    let _ = out.flush();
}

struct Concurrently;

impl MessageListenerConcurrently for Concurrently {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        print_bodies(msgs);
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

/// Fails each message's first delivery: the bodies seen so far decide.
#[derive(Default)]
struct FailFirst {
    seen: Mutex<HashSet<Vec<u8>>>,
}

impl MessageListenerConcurrently for FailFirst {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        // RECONSUME_LATER sends the whole batch back: fail it when any message in it is new
        // (the default batch size, consumeMessageBatchMaxSize 1, makes that one message).
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let bodies: Vec<Vec<u8>> = msgs
            .iter()
            .map(|m| m.body().unwrap_or_default().to_vec())
            .collect();
        let fail = bodies.iter().any(|b| !seen.contains(b));
        seen.extend(bodies.iter().cloned());
        drop(seen);
        let mut out = std::io::stdout().lock();
        for (m, b) in msgs.iter().zip(&bodies) {
            let _ = writeln!(
                out,
                "got {} {} {} {}",
                m.reconsume_times(),
                m.commit_log_offset(),
                if fail { "fail" } else { "ok" },
                String::from_utf8_lossy(b)
            );
        }
        let _ = out.flush();
        Ok(if fail {
            ConsumeConcurrentlyStatus::ReconsumeLater
        } else {
            ConsumeConcurrentlyStatus::ConsumeSuccess
        })
    }
}

struct Orderly;

impl MessageListenerOrderly for Orderly {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        context: &mut ConsumeOrderlyContext,
    ) -> ClientResult<ConsumeOrderlyStatus> {
        context.set_auto_commit(true);
        print_bodies(msgs);
        Ok(ConsumeOrderlyStatus::Success)
    }
}

async fn consume(
    client: Arc<ClientRuntime>,
    namesrv: &str,
    group: &str,
    topic: &str,
    mode: &str,
) -> ClientResult<()> {
    let mut consumer = DefaultMQPushConsumer::builder(client)
        .consumer_group(group.to_string())
        .name_server_addr(namesrv.to_string())
        .build();
    consumer.set_consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset);
    consumer.subscribe(topic, "*").await?;
    match mode {
        "orderly" => consumer.register_message_listener_orderly(Orderly),
        "retry" => consumer.register_message_listener_concurrently(FailFirst::default()),
        _ => consumer.register_message_listener_concurrently(Concurrently),
    }
    consumer.start().await?;
    answer("ready");
    let mut lines = stdin_lines();
    while lines.recv().await.is_some() {}
    consumer.shutdown().await;
    Ok(())
}
