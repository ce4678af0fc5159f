//! Processes mode, the worker's side: the hidden `lockbench worker` command. It reads a
//! [`ChildSpec`] from stdin, builds its client through the registry, connects to the resource socket,
//! says ready, waits for `go`, runs the same worker loop as tasks mode, streams interval batches and
//! finally its report as JSON lines on stdout, then exits. It stops on `stop`, at its deadline, or when
//! stdin closes (the driver is gone).

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lockers::Events;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::case::capabilities_model;
use super::oracle::{BatchQueue, COLLECT_EVERY};
use super::protocol::{ChildSpec, FromChild, ToChild};
use super::renewal::RenewalRecorder;
use super::resource::ResourceClient;
use super::resource_socket::RemoteResource;
use super::stop::StopSignal;
use super::worker::{ReadyPlan, Worker};
use crate::clock::MonoClock;
use crate::error::{EXIT_FAILED, EXIT_OK};
use crate::strategies::{self, Endpoints};

/// Runs the worker command; returns the exit code.
pub fn worker_main() -> i32 {
    let mut first = String::new();
    let spec: Result<ChildSpec, String> = std::io::stdin()
        .lock()
        .read_line(&mut first)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&first).map_err(|e| format!("bad worker spec: {e}")));
    let spec = match spec {
        Ok(spec) => spec,
        Err(message) => {
            print_line(&FromChild::Error { message });
            return EXIT_FAILED;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            print_line(&FromChild::Error {
                message: format!("tokio runtime: {e}"),
            });
            return EXIT_FAILED;
        }
    };
    runtime.block_on(async {
        let (out, lines) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_lines(lines));
        let code = match run(spec, &out).await {
            Ok(()) => EXIT_OK,
            Err(message) => {
                let _ = out.send(FromChild::Error { message });
                EXIT_FAILED
            }
        };
        drop(out);
        let _ = writer.await;
        code
    })
}

fn print_line(message: &FromChild) {
    if let Ok(text) = serde_json::to_string(message) {
        println!("{text}");
    }
}

async fn write_lines(mut lines: mpsc::UnboundedReceiver<FromChild>) {
    let mut stdout = tokio::io::stdout();
    while let Some(message) = lines.recv().await {
        let Ok(mut text) = serde_json::to_string(&message) else {
            continue;
        };
        text.push('\n');
        if stdout.write_all(text.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

async fn run(spec: ChildSpec, out: &mpsc::UnboundedSender<FromChild>) -> Result<(), String> {
    let clock = MonoClock::new();
    let strategy = strategies::find(&spec.plan.strategy)
        .ok_or_else(|| format!("unknown strategy {:?}", spec.plan.strategy))?;
    let ready = Arc::new(ReadyPlan::new(&spec.plan)?);
    let endpoints = Endpoints::new(spec.endpoints.clone());
    let measure_from = Arc::new(AtomicU64::new(u64::MAX));
    let recorder = RenewalRecorder::new(clock, measure_from.clone());
    let settings = spec.plan.settings();
    let locker = (strategy.connect)(&endpoints, &settings, Events::to(recorder.clone()))
        .await
        .map_err(|e| format!("{}: {e}", strategy.id))?;
    let capabilities = locker.capabilities();
    let resource = RemoteResource::connect(&spec.socket)
        .map_err(|e| format!("resource socket {}: {e}", spec.socket.display()))?;
    let _ = out.send(FromChild::Ready {
        capabilities: capabilities_model(&capabilities),
    });

    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let line = match stdin.next_line().await {
        Ok(Some(line)) => line,
        _ => return Ok(()), // The driver went away before the start.
    };
    let (go, measure, stop_at) = match serde_json::from_str::<ToChild>(&line) {
        Ok(ToChild::Go {
            go_ns,
            measure_from_ns,
            stop_at_ns,
        }) => (go_ns, measure_from_ns, stop_at_ns),
        Ok(ToChild::Stop) => return Ok(()),
        Err(e) => return Err(format!("bad message from the driver: {e}")),
    };
    measure_from.store(measure, Ordering::Release);
    let stop = StopSignal::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            // Any line after `go` is `stop`; end of input means the driver is gone: stop too.
            let _ = stdin.next_line().await;
            stop.set();
        }
    });
    if let Some(at) = stop_at {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(clock.instant(at).into()).await;
            stop.set();
        });
    }
    let batches = BatchQueue::new();
    let worker_done = StopSignal::new();
    let forward = tokio::spawn({
        let (out, batches, done) = (out.clone(), batches.clone(), worker_done.clone());
        async move {
            let mut tick = tokio::time::interval(COLLECT_EVERY);
            loop {
                let finished = tokio::select! {
                    _ = done.wait() => true,
                    _ = tick.tick() => false,
                };
                for batch in batches.take() {
                    let _ = out.send(FromChild::Intervals(batch));
                }
                if finished {
                    return;
                }
            }
        }
    });
    let worker = Worker {
        client: spec.client,
        locker: locker.clone(),
        fencing: capabilities.fencing,
        plan: ready,
        resource: ResourceClient::Remote(resource),
        intervals: batches,
        stop,
        clock,
        go,
        measure_from: measure,
    };
    let mut tally = worker.run().await;
    worker_done.set();
    let _ = forward.await;
    locker.close().await;
    tally.renewal = recorder.tally();
    let _ = out.send(FromChild::Report(Box::new(tally)));
    Ok(())
}
