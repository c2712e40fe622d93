//! `floor-proxy`, the built binary, between the load generator and the mock:
//! it must forward every request and answer unchanged, or the floor it
//! gives the facade benchmark means nothing.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use bridge_loadgen::closed_loop;
use bridge_testkit::MockLlm;

use crate::loops::{phase, pool, template};

struct Floor {
    child: Child,
    address: String,
}

impl Floor {
    fn start(upstream: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_floor-proxy"))
            .args(["--upstream", upstream])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, address }
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_forwards_whole_and_streamed_answers_unchanged() {
    let mock = MockLlm::start(Vec::new()).await;
    let floor = Floor::start(&mock.base_url());
    for stream in [false, true] {
        let url = format!("http://{}/v1/chat/completions", floor.address);
        let template = template(&url, stream).await;
        let (_, report) = closed_loop(pool(&template, 4), template, phase(300))
            .await
            .unwrap();
        assert!(report.ok > 10, "{report:?}");
        assert_eq!(report.errors, 0, "{report:?}");
    }
    let recorded = mock.requests();
    assert!(
        recorded
            .iter()
            .all(|request| request.path == "/v1/chat/completions")
    );
    assert!(
        recorded
            .iter()
            .any(|request| request.body["stream"] == true)
    );
    assert!(
        recorded
            .iter()
            .any(|request| request.body["stream"] == false)
    );
}

#[test]
fn a_floor_without_an_upstream_says_what_it_needs() {
    for args in [&[][..], &["--upstream", "ftp://x"][..], &["--port"][..]] {
        let output = Command::new(env!("CARGO_BIN_EXE_floor-proxy"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("floor-proxy:"), "{stderr}");
    }
}
