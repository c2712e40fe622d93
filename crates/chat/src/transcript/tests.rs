use super::*;

fn texts(lines: &[Line<'static>]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

fn transcript() -> Transcript {
    Transcript::new(Palette::new(false))
}

#[test]
fn a_delta_without_a_newline_commits_nothing() {
    let mut t = transcript();
    t.delta("Hel");
    assert!(t.take_committed(80).is_empty());
    assert_eq!(texts(&t.live_lines()), ["Hel"]);
    t.delta("lo\nWor");
    assert_eq!(texts(&t.take_committed(80)), ["Hello"]);
    assert!(t.take_committed(80).is_empty(), "a line is committed once");
    assert_eq!(texts(&t.live_lines()), ["Wor"]);
}

#[test]
fn the_whole_answer_replaces_the_pending_tail() {
    let mut t = transcript();
    t.delta("one\ntw");
    assert_eq!(texts(&t.take_committed(80)), ["one"]);
    t.answer("one\ntwo\nthree");
    assert_eq!(texts(&t.take_committed(80)), ["two", "three"]);
    assert!(t.live_lines().is_empty());
    // Without any delta the whole answer is committed at once.
    t.answer("solo");
    assert_eq!(texts(&t.take_committed(80)), ["", "solo"]);
}

#[test]
fn an_answer_that_differs_from_its_deltas_adds_only_what_is_new() {
    let mut t = transcript();
    t.delta("first line\n");
    t.answer("First Line\nsecond");
    assert_eq!(texts(&t.take_committed(80)), ["first line", "second"]);
}

#[test]
fn an_unfinished_answer_is_committed_when_the_turn_ends() {
    let mut t = transcript();
    t.delta("no newline at the end");
    t.finish_answer();
    assert_eq!(texts(&t.take_committed(80)), ["no newline at the end"]);
    assert!(t.live_lines().is_empty());
}

#[test]
fn take_committed_hands_each_line_out_once_across_resizes() {
    let mut t = transcript();
    t.push_user("a prompt long enough to wrap at twenty columns");
    let first = t.take_committed(20);
    assert_eq!(
        texts(&first),
        ["› a prompt long ", "enough to wrap at ", "twenty columns"]
    );
    t.delta("answer\n");
    // A different width now: only the new line comes, wrapped to it.
    assert_eq!(texts(&t.take_committed(120)), ["", "answer"]);
    assert!(t.take_committed(40).is_empty());
    // The full screen's rows are independent of what was taken.
    assert_eq!(t.rows(120).len(), 3);
}

#[test]
fn frames_do_not_rewrap_and_a_resize_rewraps_once() {
    let mut t = transcript();
    for n in 0..5_000 {
        t.push_line(Line::from(format!(
            "line {n} of a long transcript that wraps at forty columns"
        )));
    }
    for _ in 0..10 {
        assert!(t.rows(40).len() > 5_000);
    }
    assert_eq!(t.wrap_count, 5_000);
    t.push_line(Line::from("one more"));
    t.rows(40);
    assert_eq!(t.wrap_count, 5_001, "new lines are wrapped append-only");
    t.rows(120);
    t.rows(120);
    assert_eq!(t.wrap_count, 5_001 + 5_001);
}

#[test]
fn clear_hides_the_past_from_the_screen_only() {
    let mut t = transcript();
    t.push_user("before");
    t.clear_view();
    assert!(t.rows(80).is_empty());
    t.push_user("after");
    // The gap before a block stays: the inline mode prints the same lines.
    assert_eq!(texts(t.rows(80)), ["", "› after"]);
    assert_eq!(texts(&t.all_lines(80)), ["› before", "", "› after"]);
}
