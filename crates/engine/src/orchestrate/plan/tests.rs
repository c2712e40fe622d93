use super::*;

fn plan(tasks: &[&str], deps: &[(&str, &[&str])]) -> TaskPlan {
    TaskPlan {
        tasks: tasks
            .iter()
            .map(|id| SubTask {
                id: (*id).to_owned(),
                description: format!("do {id}"),
                estimated_complexity: Complexity::S,
                runner: None,
                files: Vec::new(),
                read_only: false,
            })
            .collect(),
        dependencies: deps
            .iter()
            .map(|(task, needs)| {
                (
                    (*task).to_owned(),
                    needs.iter().map(|n| (*n).to_owned()).collect(),
                )
            })
            .collect(),
    }
}

fn ids(plan: &TaskPlan, waves: &[Vec<usize>]) -> Vec<Vec<String>> {
    waves
        .iter()
        .map(|wave| wave.iter().map(|&i| plan.tasks[i].id.clone()).collect())
        .collect()
}

#[test]
fn a_diamond_runs_in_three_waves_in_plan_order() {
    let diamond = plan(
        &["b", "a", "c", "d"],
        &[("b", &["a"]), ("c", &["a"]), ("d", &["c", "b"])],
    );
    let waves = diamond.waves().unwrap();
    assert_eq!(
        ids(&diamond, &waves),
        [vec!["a"], vec!["b", "c"], vec!["d"]]
    );
    assert_eq!(diamond.dependencies_of(3), [0, 2]);
}

#[test]
fn independent_tasks_share_the_first_wave() {
    let flat = plan(&["t1", "t2", "t3"], &[]);
    assert_eq!(flat.waves().unwrap(), [vec![0, 1, 2]]);
}

#[test]
fn a_cycle_is_refused_and_named() {
    let cyclic = plan(
        &["t1", "t2", "t3", "t4"],
        &[("t2", &["t1", "t4"]), ("t3", &["t2"]), ("t4", &["t3"])],
    );
    let err = cyclic.waves().unwrap_err();
    let PlanError::Cycle(cycle) = &err else {
        panic!("{err}")
    };
    assert_eq!(cycle.first(), cycle.last(), "{cycle:?}");
    for id in ["t2", "t3", "t4"] {
        assert!(cycle.iter().any(|c| c == id), "{cycle:?}");
    }
    assert!(err.to_string().contains("→"), "{err}");
}

#[test]
fn unknown_ids_self_dependencies_and_bad_ids_are_refused_by_name() {
    assert_eq!(
        plan(&["t1"], &[("t1", &["t9"])]).waves(),
        Err(PlanError::UnknownDependency {
            task: "t1".into(),
            dependency: "t9".into()
        })
    );
    assert_eq!(
        plan(&["t1"], &[("t7", &["t1"])]).waves(),
        Err(PlanError::UnknownTask("t7".into()))
    );
    assert_eq!(
        plan(&["t1"], &[("t1", &["t1"])]).waves(),
        Err(PlanError::SelfDependency("t1".into()))
    );
    assert_eq!(
        plan(&["t1", "t1"], &[]).waves(),
        Err(PlanError::Duplicate("t1".into()))
    );
    assert!(matches!(
        plan(&["../x"], &[]).waves(),
        Err(PlanError::InvalidId { .. })
    ));
    assert_eq!(plan(&[], &[]).waves(), Err(PlanError::Empty));
}

#[test]
fn plan_files_read_as_json_or_yaml_with_variables() {
    let json = r#"{"tasks": [{"id": "t1", "description": "Fix {{module}}", "estimatedComplexity": "S"},
        {"id": "t2", "description": "Test it", "runner": "claude"}], "dependencies": {"t2": ["t1"]}}"#;
    let yaml = "tasks:\n  - id: t1\n    description: Fix {{module}}\n    estimatedComplexity: S\n  - id: t2\n    description: Test it\n    runner: claude\ndependencies:\n  t2: [t1]\n";
    let from_json = parse_plan_file(json).unwrap();
    let mut from_yaml = parse_plan_file(yaml).unwrap();
    assert_eq!(from_json, from_yaml);
    assert_eq!(from_yaml.tasks[1].runner, Some(SubTaskRunner::Claude));
    assert_eq!(from_yaml.tasks[1].estimated_complexity, Complexity::M);
    let vars = BTreeMap::from([("module".to_owned(), "parser.rs".to_owned())]);
    from_yaml.substitute(&vars).unwrap();
    assert_eq!(from_yaml.tasks[0].description, "Fix parser.rs");
    let err = parse_plan_file(json)
        .unwrap()
        .substitute(&BTreeMap::new())
        .unwrap_err();
    assert!(err.contains("{{module}}") && err.contains("t1"), "{err}");
    assert!(parse_plan_file(r#"{"tasks": [], "extra": 1}"#).is_err());
    assert!(parse_plan_file("- just\n- a list\n").is_err());
}

#[test]
fn a_thousand_task_chain_orders_without_recursion() {
    let ids: Vec<String> = (0..MAX_TASKS).map(|i| format!("t{i}")).collect();
    let mut chain = TaskPlan {
        tasks: Vec::new(),
        dependencies: BTreeMap::new(),
    };
    for (i, id) in ids.iter().enumerate() {
        chain.tasks.push(SubTask {
            id: id.clone(),
            description: "x".into(),
            estimated_complexity: Complexity::S,
            runner: None,
            files: Vec::new(),
            read_only: false,
        });
        if i > 0 {
            chain
                .dependencies
                .insert(id.clone(), vec![ids[i - 1].clone()]);
        }
    }
    assert_eq!(chain.waves().unwrap().len(), MAX_TASKS);
}

#[test]
fn a_description_past_its_bound_is_refused_by_task_and_size() {
    let mut long = plan(&["a", "b"], &[]);
    long.tasks[1].description = "x".repeat(MAX_DESCRIPTION_BYTES);
    assert!(long.waves().is_ok(), "the bound itself is allowed");
    long.tasks[1].description.push('x');
    let err = long.waves().unwrap_err();
    assert_eq!(
        err,
        PlanError::DescriptionTooLong {
            id: "b".into(),
            bytes: MAX_DESCRIPTION_BYTES + 1
        }
    );
    assert!(err.to_string().contains("\"b\""), "{err}");
}

#[test]
fn a_task_past_its_bound_is_refused_with_its_size() {
    use crate::orchestrate::{MAX_TASK_BYTES, OrchestrateError, check_task};
    assert!(check_task(&"t".repeat(MAX_TASK_BYTES)).is_ok());
    let err = check_task(&"t".repeat(MAX_TASK_BYTES + 1)).unwrap_err();
    assert!(matches!(err, OrchestrateError::TaskTooLong { bytes } if bytes == MAX_TASK_BYTES + 1));
    assert!(
        err.to_string().contains("put long material in a file"),
        "{err}"
    );
}
