//! Real children: the environment they see, their process group, the
//! stderr tail, and termination.

use std::time::{Duration, Instant};

use bridge_launch::{ChildEnv, Launch, Stderr};
use tokio::io::AsyncReadExt;

async fn stdout_of(mut child: bridge_launch::Child) -> String {
    let mut text = String::new();
    child
        .take_stdout()
        .unwrap()
        .read_to_string(&mut text)
        .await
        .unwrap();
    child.wait().await.unwrap();
    text
}

fn alive(pid: i32) -> bool {
    // Signal 0 only checks that the process exists; a zombie counts as
    // gone (its /proc status says so).
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .is_ok_and(|status| !status.lines().any(|line| line.starts_with("State:\tZ")))
}

#[tokio::test]
async fn the_child_sees_the_policy_environment_only() {
    let child = Launch::new("sh")
        .args(["-c", "env"])
        .env(ChildEnv::minimal().set("GIVEN", "yes"))
        .spawn()
        .unwrap();
    let env = stdout_of(child).await;
    assert!(env.lines().any(|line| line == "GIVEN=yes"), "{env}");
    assert!(env.lines().any(|line| line.starts_with("PATH=")), "{env}");
    // The test runner's own variables (CARGO_*, RUST_*) are not base names.
    assert!(!env.lines().any(|line| line.starts_with("CARGO_")), "{env}");
}

#[tokio::test]
async fn dropping_the_child_kills_its_whole_group() {
    let mut child = Launch::new("sh")
        .args(["-c", "sleep 300 & echo $!; wait"])
        .spawn()
        .unwrap();
    let mut stdout = child.take_stdout().unwrap();
    let mut line = Vec::new();
    let mut byte = [0_u8; 1];
    while stdout.read(&mut byte).await.unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let grandchild: i32 = String::from_utf8(line).unwrap().trim().parse().unwrap();
    assert!(alive(grandchild));
    drop(child);
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(grandchild) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(grandchild), "the grandchild outlived the handle");
}

#[tokio::test]
async fn the_stderr_tail_is_bounded_and_redacted() {
    let mut child = Launch::new("sh")
        .args([
            "-c",
            "for i in 1 2 3 4 5; do echo line $i >&2; done; echo token ghp_abcdefghijklmnopqrstuvwxyz0123456789 >&2",
        ])
        .stderr(Stderr::Tail {
            lines: 3,
            line_chars: 100,
        })
        .spawn()
        .unwrap();
    child.wait().await.unwrap();
    // The reader task may still be on its last line.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut tail = child.stderr_tail().unwrap_or_default();
    while !tail.contains("token") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        tail = child.stderr_tail().unwrap_or_default();
    }
    assert_eq!(tail, "line 4 | line 5 | token [REDACTED]");
}

#[tokio::test]
async fn terminate_escalates_to_kill_for_a_child_that_ignores_term() {
    let mut child = Launch::new("sh")
        .args(["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"])
        .spawn()
        .unwrap();
    let mut stdout = child.take_stdout().unwrap();
    let mut ready = [0_u8; 6];
    stdout.read_exact(&mut ready).await.unwrap();
    let started = Instant::now();
    let status = child.terminate(Duration::from_millis(100)).await;
    assert!(status.is_some_and(|status| !status.success()));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_missing_program_is_a_permanent_error_naming_it() {
    let err = Launch::new("/no/such/program").spawn().unwrap_err();
    assert!(err.is_permanent());
    assert!(err.to_string().contains("/no/such/program"), "{err}");
}
