//! Interactive prompts, on stderr: one per waiting call, giving the answer a person chose. Lists
//! and yes/no are inquire's; free text is [`LineText`], with the line-editing keys.
//!
//! Esc declines a question (with an optional reason); Ctrl-C leaves. Prompts block, so callers run
//! them off the async runtime.

use std::fmt;

use inquire::validator::Validation;
use inquire::{CustomUserError, Editor, InquireError, MultiSelect, Select};

use super::CliError;
use super::call::WaitingCall;
use super::line_prompt::{LineText, render_config};
use super::print::describe_call;
use crate::proto::v1 as pb;
use crate::proto::v1::answer::Answer;
use crate::proto::v1::approval_decision::{Approve, Decision, Edit, Reject};

const SINGLE_HELP: &str = "↑↓ to move, enter to choose, type to filter, esc to decline";
const MULTI_HELP: &str = "↑↓ to move, space to toggle, enter to send, esc to decline";
const TEXT_HELP: &str = "enter to send, esc to decline";

/// Runs a prompt, which blocks, off the async runtime.
pub async fn blocking<T: Send + 'static>(
    prompt: impl FnOnce() -> Result<T, CliError> + Send + 'static,
) -> Result<T, CliError> {
    static RENDER: std::sync::Once = std::sync::Once::new();
    RENDER.call_once(|| {
        inquire::set_global_render_config(render_config());
    });
    tokio::task::spawn_blocking(prompt)
        .await
        .map_err(|error| CliError::Io(std::io::Error::other(error)))?
}

/// Asks for the settlement of one call, as [`ask`] does, until the call expires: then the prompt
/// is closed with a message (and `hint`, what to do next) and the client exits with status 1,
/// nothing sent. A prompt blocks on the terminal and cannot be stopped from outside, hence the exit.
pub async fn ask_before_expiry(call: WaitingCall, hint: String) -> Result<Answer, CliError> {
    let deadline = call
        .expire_time
        .and_then(|time| std::time::SystemTime::try_from(time).ok());
    let saved = terminal::save();
    let asked = blocking(move || ask(&call));
    let Some(deadline) = deadline else {
        return asked.await;
    };
    let left = deadline
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    tokio::select! {
        answer = asked => answer,
        () = tokio::time::sleep(left) => {
            terminal::restore(saved);
            eprintln!(
                "\naskuser: the question expired while its prompt was open: nothing was sent{hint}"
            );
            std::process::exit(1);
        }
    }
}

/// The terminal's mode from before a prompt, to give it back when a prompt is abandoned.
#[cfg(unix)]
mod terminal {
    use std::io::Write;

    pub struct Saved(Option<libc::termios>);

    pub fn save() -> Saved {
        // SAFETY: `termios` is plain data, and tcgetattr only writes into it.
        unsafe {
            let mut mode: libc::termios = std::mem::zeroed();
            Saved((libc::tcgetattr(libc::STDIN_FILENO, &mut mode) == 0).then_some(mode))
        }
    }

    pub fn restore(saved: Saved) {
        if let Some(mode) = saved.0 {
            // SAFETY: the mode tcgetattr gave for the same descriptor.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &mode);
            }
        }
        // The cursor, which a list prompt hides, and no more bracketed paste, which a prompt asks.
        let mut err = std::io::stderr();
        let _ = write!(err, "\x1b[?25h\x1b[?2004l");
        let _ = err.flush();
    }
}

#[cfg(not(unix))]
mod terminal {
    pub struct Saved;
    pub fn save() -> Saved {
        Saved
    }
    pub fn restore(_: Saved) {}
}

/// The prompt a run of `agent` starts with.
pub fn ask_prompt(agent: &str) -> Result<String, CliError> {
    match LineText::new(&format!("What should {agent} do?"))
        .prompt()
        .inspect_err(erased)
    {
        Err(InquireError::OperationInterrupted | InquireError::OperationCanceled) => {
            Err(CliError::interrupted())
        }
        other => Ok(other?),
    }
}

/// Asks for the settlement of one call, until the person gives one.
pub fn ask(call: &WaitingCall) -> Result<Answer, CliError> {
    loop {
        let chosen = match call.kind {
            pb::SuspendKind::Approval => ask_approval(call),
            pb::SuspendKind::ClientTool => ask_output(call),
            pb::SuspendKind::Form => super::form_prompt::ask_form(&call.form),
            _ => ask_question(call).or_else(|error| match error {
                InquireError::OperationCanceled => ask_decline(),
                error => Err(error),
            }),
        };
        match chosen {
            Ok(answer) => return Ok(answer),
            // Esc where nothing is declined: back to the call's prompt.
            Err(InquireError::OperationCanceled) => continue,
            Err(InquireError::OperationInterrupted) => return Err(CliError::interrupted()),
            Err(error) => return Err(error.into()),
        }
    }
}

/// One of a question's options.
enum Choice {
    Offered { label: String, description: String },
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Offered { label, description } if description.is_empty() => f.write_str(label),
            Choice::Offered { label, description } => write!(f, "{label} — {description}"),
        }
    }
}

impl Choice {
    /// What the answer line shows once chosen.
    fn label(&self) -> &str {
        match self {
            Choice::Offered { label, .. } => label,
        }
    }
}

fn offered(call: &WaitingCall) -> Vec<Choice> {
    call.payload
        .options
        .iter()
        .map(|option| Choice::Offered {
            label: option.label.clone(),
            description: option.description.clone(),
        })
        .collect()
}

fn ask_question(call: &WaitingCall) -> Result<Answer, InquireError> {
    let question = call.payload.question.as_str();
    match call.selection_mode() {
        pb::SelectionMode::SingleSelect => {
            let choice = Select::new(question, offered(call))
                .with_help_message(SINGLE_HELP)
                .with_formatter(&|chosen| chosen.value.label().to_owned())
                .prompt()
                .inspect_err(erased)?;
            Ok(selections(std::iter::once(choice)))
        }
        pb::SelectionMode::MultiSelect => {
            // A multi select may be answered with no option (see `SelectionMode`): saying so is a
            // choice of its own, so that enter on nothing is not taken for it by mistake, and it
            // goes with no other option: it is asked only when nothing is checked.
            loop {
                let chosen = MultiSelect::new(question, offered(call))
                    .with_help_message(MULTI_HELP)
                    .prompt()
                    .inspect_err(erased)?;
                if !chosen.is_empty() {
                    return Ok(selections(chosen));
                }
                let none = inquire::Confirm::new(&format!("{question} (none of these)?"))
                    .with_default(false)
                    .with_help_message("y to answer with no option, n to go back to the list")
                    .prompt()
                    .inspect_err(erased);
                match none {
                    Ok(true) => return Ok(selections(Vec::new())),
                    Ok(false) | Err(InquireError::OperationCanceled) => continue,
                    Err(error) => return Err(error),
                }
            }
        }
        pb::SelectionMode::Unspecified => {
            let text = LineText::new(question)
                .with_help_message(TEXT_HELP)
                .with_validator(not_blank)
                .prompt()
                .inspect_err(erased)?;
            Ok(Answer::Text(text))
        }
    }
}

fn selections(chosen: impl IntoIterator<Item = Choice>) -> Answer {
    let labels = chosen
        .into_iter()
        .map(|choice| match choice {
            Choice::Offered { label, .. } => label,
        })
        .collect();
    Answer::Selections(pb::Selections { labels })
}

fn not_blank(text: &str) -> Result<Validation, CustomUserError> {
    Ok(if text.trim().is_empty() {
        Validation::Invalid("the answer must not be blank".into())
    } else {
        Validation::Valid
    })
}

fn ask_decline() -> Result<Answer, InquireError> {
    let reason = LineText::new("Decline; why (optional)?")
        .with_help_message("enter to decline, esc to go back to the question")
        .prompt()
        .inspect_err(erased)?;
    Ok(Answer::Decline(pb::Decline { reason }))
}

/// What a person may do with a call that waits for approval.
enum Action {
    Approve,
    Reject,
    Edit,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Approve => "approve",
            Action::Reject => "reject",
            Action::Edit => "edit the arguments",
        })
    }
}

fn ask_approval(call: &WaitingCall) -> Result<Answer, InquireError> {
    eprintln!("{}", describe_call(call));
    let action = Select::new(
        &format!("Run {}?", call.tool_name),
        vec![Action::Approve, Action::Reject, Action::Edit],
    )
    .with_help_message("↑↓ to move, enter to choose")
    .prompt()
    .inspect_err(erased)?;
    let decision = match action {
        Action::Approve => Decision::Approve(Approve {}),
        Action::Reject => {
            let reason = LineText::new("Reject; why (optional)?")
                .with_help_message("enter to reject, esc to go back")
                .prompt()
                .inspect_err(erased)?;
            Decision::Reject(Reject { reason })
        }
        Action::Edit => Decision::Edit(Edit {
            arguments_json: edit_arguments(call)?,
        }),
    };
    Ok(Answer::Approval(pb::ApprovalDecision {
        decision: Some(decision),
    }))
}

/// New arguments: in $VISUAL or $EDITOR when one is set, else inline.
fn edit_arguments(call: &WaitingCall) -> Result<String, InquireError> {
    let has_editor = ["VISUAL", "EDITOR"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    if has_editor {
        let pretty = call.pretty_arguments();
        Editor::new("Arguments (JSON):")
            .with_predefined_text(&pretty)
            .with_file_extension(".json")
            .with_validator(json_object)
            .prompt()
            .inspect_err(erased)
    } else {
        LineText::new("Arguments (JSON):")
            .with_initial_value(&call.arguments_json)
            .with_help_message("enter to send, esc to go back")
            .with_validator(json_object)
            .prompt()
            .inspect_err(erased)
    }
}

/// The server checks the arguments against the tool's schema; this only catches what is not even
/// a JSON object.
fn json_object(text: &str) -> Result<Validation, CustomUserError> {
    Ok(match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Validation::Valid,
        Ok(_) => Validation::Invalid("the arguments must be a JSON object".into()),
        Err(error) => Validation::Invalid(format!("not JSON: {error}").into()),
    })
}

fn ask_output(call: &WaitingCall) -> Result<Answer, InquireError> {
    eprintln!("{}", describe_call(call));
    let content = LineText::new(&format!("Output of {}:", call.tool_name))
        .with_help_message("enter to send")
        .prompt()
        .inspect_err(erased)?;
    Ok(Answer::ToolOutput(pb::ToolOutput {
        content,
        is_error: false,
    }))
}

/// One call of the picker: its number, kind, agent, what it asks and how long it has waited.
pub struct PickerEntry {
    pub number: usize,
    pub row: String,
}

impl fmt::Display for PickerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>2}. {}", self.number, self.row)
    }
}

/// Asks which of `entries` to answer (↑↓ or its number); the index chosen.
pub fn pick(title: &str, entries: Vec<PickerEntry>) -> Result<usize, CliError> {
    let scorer = &|input: &str, entry: &PickerEntry, text: &str, _index: usize| -> Option<i64> {
        let input = input.trim();
        if input.is_empty() {
            return Some(0);
        }
        if let Ok(number) = input.parse::<usize>() {
            return (number == entry.number).then_some(0);
        }
        text.to_lowercase()
            .contains(&input.to_lowercase())
            .then_some(0)
    };
    match Select::new(title, entries)
        .with_help_message("↑↓ to move or type its number, enter to answer it, esc to leave")
        .with_scorer(scorer)
        .with_page_size(15)
        .prompt()
        .inspect_err(erased)
    {
        Ok(entry) => Ok(entry.number - 1),
        Err(InquireError::OperationInterrupted | InquireError::OperationCanceled) => {
            Err(CliError::interrupted())
        }
        Err(error) => Err(error.into()),
    }
}

/// Esc leaves nothing behind: the line inquire ends a canceled prompt with (its title, and no
/// `<canceled>` mark: see [`blocking`]) is erased.
pub fn erased(error: &InquireError) {
    use std::io::Write;
    if matches!(error, InquireError::OperationCanceled) {
        let mut err = std::io::stderr();
        // Up one line, then clear it.
        let _ = write!(err, "\x1b[1A\r\x1b[2K");
        let _ = err.flush();
    }
}
