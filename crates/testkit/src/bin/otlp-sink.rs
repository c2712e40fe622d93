//! A collector for the benchmarks (scripts/bench-facade.sh,
//! scripts/bench-gateway.sh): OTLP/HTTP on 127.0.0.1 (a free port), spans
//! decoded and counted, nothing kept. Prints
//! `listening on 127.0.0.1:PORT`, then `spans N` once a second while the
//! count grows, so a script can tell that the hub really exported.

use std::io::Write as _;
use std::time::Duration;

use bridge_testkit::otlp::{Behaviour, OtlpReceiver};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let receiver = match OtlpReceiver::try_start().await {
        Ok(receiver) => receiver,
        Err(err) => {
            eprintln!("otlp-sink: cannot listen: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    receiver.set_behaviour(Behaviour::Count);
    let endpoint = receiver.endpoint();
    let address = endpoint.trim_start_matches("http://");
    say(&format!("listening on {address}"));
    let mut reported = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let count = receiver.span_count();
        if count != reported {
            say(&format!("spans {count}"));
            reported = count;
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
