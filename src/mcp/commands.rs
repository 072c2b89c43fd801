//! `list_commands`, `get_command`, `execute_command`: generated from the clap definition
//! of the `svc` command (`clap::CommandFactory`), so they always match the CLI.

use clap::{ArgAction, CommandFactory as _};
use serde_json::{Value as Json, json};
use std::path::Path;
use std::time::Duration;

/// Every runnable command as (`words`, clap command): leaves of the tree (`run`,
/// `db inspect`, `db alias add`, ...).
fn leaves() -> Vec<(String, clap::Command)> {
    let root = crate::cli::Cli::command();
    let mut out = Vec::new();
    // Iterative walk: (path, command).
    let mut stack: Vec<(String, clap::Command)> = root
        .get_subcommands()
        .map(|c| (c.get_name().to_string(), c.clone()))
        .collect();
    stack.reverse();
    while let Some((path, cmd)) = stack.pop() {
        if cmd.get_name() == "help" {
            continue;
        }
        let subs: Vec<clap::Command> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .cloned()
            .collect();
        if subs.is_empty() {
            out.push((path, cmd));
        } else {
            for s in subs.into_iter().rev() {
                // reversed so the stack pops them in declaration order
                stack.push((format!("{path} {}", s.get_name()), s));
            }
        }
    }
    out
}

fn group_of(path: &str) -> String {
    match path.split_once(' ') {
        Some((first, _)) => first.to_string(),
        None => "core".to_string(),
    }
}

fn help_of(cmd: &clap::Command) -> String {
    cmd.get_about()
        .or_else(|| cmd.get_long_about())
        .map(|s| s.to_string())
        .unwrap_or_default()
}

pub fn list_commands() -> Json {
    let cmds = leaves();
    let mut groups: Vec<String> = Vec::new();
    let commands: Vec<Json> = cmds
        .iter()
        .map(|(path, cmd)| {
            let group = group_of(path);
            if !groups.contains(&group) {
                groups.push(group.clone());
            }
            json!({"name": path, "help": help_of(cmd), "group": group})
        })
        .collect();
    json!({"total": commands.len(), "commands": commands, "groups": groups})
}

fn normalise(name: &str) -> String {
    name.split_whitespace()
        .filter(|w| *w != "svc")
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn get_command(name: &str) -> Json {
    let want = normalise(name);
    let Some((path, cmd)) = leaves().into_iter().find(|(p, _)| *p == want) else {
        return json!({"error": format!("unknown command `{name}`; list_commands names them all")});
    };
    let args: Vec<Json> = cmd
        .get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .map(|a| {
            let action = a.get_action();
            let multi = matches!(action, ArgAction::Append)
                || a.get_num_args().is_some_and(|n| n.max_values() > 1);
            let kind = if a.is_last_set() || a.is_trailing_var_arg_set() {
                "REMAINDER"
            } else if multi {
                "MULTI"
            } else if a.is_positional() {
                "POSITIONAL"
            } else {
                "OPTION"
            };
            let ty = match action {
                ArgAction::SetTrue | ArgAction::SetFalse => "bool",
                ArgAction::Count => "int",
                _ => "str",
            };
            let default: Json = match a.get_default_values() {
                [] if ty == "bool" => json!(matches!(action, ArgAction::SetFalse)),
                [] => Json::Null,
                [one] => json!(one.to_string_lossy()),
                many => json!(many.iter().map(|v| v.to_string_lossy()).collect::<Vec<_>>()),
            };
            let name = match a.get_long() {
                Some(l) => format!("--{l}"),
                None => a.get_id().to_string(),
            };
            let mut o = json!({
                "name": name,
                "kind": kind,
                "type": ty,
                "required": a.is_required_set(),
                "default": default,
                "help": a.get_help().map(|h| h.to_string()).unwrap_or_default(),
                "source": "svc",
                "short": a.get_short().map(|c| format!("-{c}")),
            });
            let choices: Vec<String> = a
                .get_possible_values()
                .iter()
                .filter(|_| ty != "bool")
                .map(|p| p.get_name().to_string())
                .collect();
            if !choices.is_empty() {
                o["choices"] = json!(choices);
            }
            o
        })
        .collect();
    json!({
        "name": path,
        "help": cmd.get_long_about().or_else(|| cmd.get_about()).map(|s| s.to_string()).unwrap_or_default(),
        "group": group_of(&path),
        "source": "svc",
        "args": args,
    })
}

/// Largest output kept from each stream of a child.
const MAX_CHILD_OUTPUT: usize = 1 << 20;

fn clip(mut s: String) -> String {
    if s.len() > MAX_CHILD_OUTPUT {
        let mut end = MAX_CHILD_OUTPUT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("\n[output truncated]\n");
    }
    s
}

/// Run `svc <command> <args…>` as a child of the current binary in `cwd`, killed after
/// `timeout`. Exit status as the CLI's: 0 success, 1 failure, 2 usage error.
pub async fn execute(command: &str, args: &[String], timeout: Duration, cwd: &Path) -> Json {
    let words: Vec<String> = normalise(command)
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    let shown = std::iter::once("svc".to_string())
        .chain(words.iter().cloned())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    if words.is_empty() {
        return json!({"success": false, "exit_code": 2, "stdout": "", "stderr": "error: no command given\n", "command": shown});
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            return json!({"success": false, "exit_code": 1, "stdout": "", "stderr": format!("cannot find the svc binary: {e}\n"), "command": shown});
        }
    };
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(&words)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return json!({"success": false, "exit_code": 1, "stdout": "", "stderr": format!("cannot start: {e}\n"), "command": shown});
        }
    };
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => {
            let code = out.status.code().unwrap_or(1);
            json!({
                "success": code == 0,
                "exit_code": code,
                "stdout": clip(String::from_utf8_lossy(&out.stdout).into_owned()),
                "stderr": clip(String::from_utf8_lossy(&out.stderr).into_owned()),
                "command": shown,
            })
        }
        Ok(Err(e)) => {
            json!({"success": false, "exit_code": 1, "stdout": "", "stderr": format!("{e}\n"), "command": shown})
        }
        // Dropping the future drops the child, which kills it (`kill_on_drop`).
        Err(_) => json!({
            "success": false,
            "exit_code": 1,
            "stdout": "",
            "stderr": format!("timed out after {} s (the command was stopped)\n", timeout.as_secs()),
            "command": shown,
            "error": "timeout",
        }),
    }
}
