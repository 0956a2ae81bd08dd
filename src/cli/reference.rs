//! `sgtsne reference`: the command-line reference as Markdown, generated from the clap
//! definitions (every subcommand, its description and usage, every argument with its help,
//! default and possible values). The page `docs/reference/cli.md` is this command's output,
//! and a test fails when the two differ, so the page cannot drift from the flags.

use std::fmt::Write;

use clap::builder::PossibleValue;
use clap::{Arg, Command};

/// Where the generated page is kept, relative to the repository.
pub const PAGE: &str = "docs/reference/cli.md";

/// The reference of `cmd` (the whole command line, built here) as one Markdown page.
pub fn markdown(mut cmd: Command) -> String {
    // Built, the subcommands know their full names ("sgtsne embed") and usage.
    cmd.build();
    let name = cmd.get_name().to_string();
    let mut page = String::new();
    let _ = writeln!(page, "# `{name}` command-line reference\n");
    let _ = writeln!(
        page,
        "Generated from the command's own definitions by `{name} reference > {PAGE}`; \
         edit the doc comments of `src/cli/`, not this page.\n"
    );
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(page, "{about}\n");
    }
    let subcommands: Vec<&Command> = shown(&cmd).collect();
    for sub in &subcommands {
        let full = format!("{name} {}", sub.get_name());
        let _ = writeln!(page, "- [`{full}`](#{})", full.replace(' ', "-"));
    }
    for sub in subcommands {
        section(&mut page, sub, &name);
    }
    page.truncate(page.trim_end().len());
    page.push('\n');
    page
}

/// The subcommands a reader can call: not hidden, and not clap's `help`.
fn shown(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// The section of subcommand `cmd` of `parent` (its full name so far), then its own
/// subcommands'.
fn section(page: &mut String, cmd: &Command, parent: &str) {
    let full = format!("{parent} {}", cmd.get_name());
    let _ = writeln!(page, "\n## `{full}`\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(page, "{about}\n");
    }
    let mut usage = cmd.clone().render_usage().to_string();
    if let Some(rest) = usage.strip_prefix("Usage: ") {
        usage = rest.to_string();
    }
    let _ = writeln!(page, "```text\n{}\n```", usage.trim_end());
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) =
        args.into_iter().partition(|a| a.is_positional());
    for (title, list) in [("Arguments", positionals), ("Options", options)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(page, "\n### {title}\n");
        for arg in list {
            argument(page, arg);
        }
    }
    for sub in shown(cmd) {
        section(page, sub, &full);
    }
}

/// One argument as a list item: its spelling, its help, then its default and possible
/// values.
fn argument(page: &mut String, arg: &Arg) {
    let _ = write!(page, "- `{}`", spelling(arg));
    if arg.is_required_set() {
        page.push_str(" (required)");
    }
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string());
    if let Some(help) = help.filter(|h| !h.trim().is_empty()) {
        let _ = write!(page, ": {}", indented(help.trim(), "  "));
    }
    page.push('\n');
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && takes_value(arg) {
        let _ = writeln!(page, "\n  Default: {}.", defaults.join(", "));
    }
    let values: Vec<PossibleValue> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if values.is_empty() || !takes_value(arg) {
        return;
    }
    if values.iter().any(|v| v.get_help().is_some()) {
        let _ = writeln!(page, "\n  Possible values:\n");
        for v in &values {
            let _ = write!(page, "  - `{}`", v.get_name());
            if let Some(help) = v.get_help() {
                let _ = write!(page, ": {}", indented(&help.to_string(), "    "));
            }
            page.push('\n');
        }
    } else {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        let _ = writeln!(page, "\n  Possible values: {}.", names.join(", "));
    }
}

/// Whether the argument takes a value (a flag such as `--quiet` does not: its `false`
/// default and `true`/`false` values say nothing to a reader).
fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
}

/// How the argument is written on the command line: `<NAME>` for a positional,
/// `-s, --long <VALUE>` for an option.
fn spelling(arg: &Arg) -> String {
    let value = match arg.get_value_names() {
        Some(names) => names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" "),
        None => format!("<{}>", arg.get_id().as_str().to_uppercase()),
    };
    if arg.is_positional() {
        return value;
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut spelled = names.join(", ");
    if takes_value(arg) {
        spelled.push(' ');
        spelled.push_str(&value);
    }
    spelled
}

/// `text` continued under a list item: its later lines indented by `indent`.
fn indented(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(indent);
            }
        }
        out.push_str(line);
    }
    out
}
