//! Interactive prompts, on stderr: one per waiting call, giving the answer a person chose.
//!
//! Esc declines a question (with an optional reason); Ctrl-C leaves. Prompts block, so callers run
//! them off the async runtime.

use std::fmt;

use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{CustomUserError, Editor, InquireError, MultiSelect, Select, Text};

use super::CliError;
use super::call::WaitingCall;
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
    tokio::task::spawn_blocking(prompt)
        .await
        .map_err(|error| CliError::Io(std::io::Error::other(error)))?
}

/// The prompt a run of `agent` starts with.
pub fn ask_prompt(agent: &str) -> Result<String, CliError> {
    match Text::new(&format!("What should {agent} do?")).prompt() {
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

/// One of a question's options, or the explicit empty answer of a multi select.
enum Choice {
    Offered { label: String, description: String },
    NoneOfThese,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Offered { label, description } if description.is_empty() => f.write_str(label),
            Choice::Offered { label, description } => write!(f, "{label} — {description}"),
            Choice::NoneOfThese => f.write_str(self.label()),
        }
    }
}

impl Choice {
    /// What the answer line shows once chosen.
    fn label(&self) -> &str {
        match self {
            Choice::Offered { label, .. } => label,
            Choice::NoneOfThese => "(none of these)",
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
                .prompt()?;
            Ok(selections(std::iter::once(choice)))
        }
        pb::SelectionMode::MultiSelect => {
            // A multi select may be answered with no option (see `SelectionMode`): saying so is a
            // choice of its own, so that enter on nothing is not taken for it by mistake.
            let mut choices = offered(call);
            choices.push(Choice::NoneOfThese);
            let chosen = MultiSelect::new(question, choices)
                .with_help_message(MULTI_HELP)
                .with_validator(one_or_none)
                .prompt()?;
            Ok(selections(chosen))
        }
        pb::SelectionMode::Unspecified => {
            let text = Text::new(question)
                .with_help_message(TEXT_HELP)
                .with_validator(not_blank)
                .prompt()?;
            Ok(Answer::Text(text))
        }
    }
}

fn selections(chosen: impl IntoIterator<Item = Choice>) -> Answer {
    let labels = chosen
        .into_iter()
        .filter_map(|choice| match choice {
            Choice::Offered { label, .. } => Some(label),
            Choice::NoneOfThese => None,
        })
        .collect();
    Answer::Selections(pb::Selections { labels })
}

fn one_or_none(chosen: &[ListOption<&Choice>]) -> Result<Validation, CustomUserError> {
    let none = chosen
        .iter()
        .any(|option| matches!(option.value, Choice::NoneOfThese));
    Ok(match chosen.len() {
        0 => Validation::Invalid("select an option, or (none of these)".into()),
        count if none && count > 1 => {
            Validation::Invalid("(none of these) goes with no other option".into())
        }
        _ => Validation::Valid,
    })
}

fn not_blank(text: &str) -> Result<Validation, CustomUserError> {
    Ok(if text.trim().is_empty() {
        Validation::Invalid("the answer must not be blank".into())
    } else {
        Validation::Valid
    })
}

fn ask_decline() -> Result<Answer, InquireError> {
    let reason = Text::new("Decline; why (optional)?")
        .with_help_message("enter to decline, esc to go back to the question")
        .prompt()?;
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
    .prompt()?;
    let decision = match action {
        Action::Approve => Decision::Approve(Approve {}),
        Action::Reject => {
            let reason = Text::new("Reject; why (optional)?")
                .with_help_message("enter to reject, esc to go back")
                .prompt()?;
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
    } else {
        Text::new("Arguments (JSON):")
            .with_initial_value(&call.arguments_json)
            .with_help_message("enter to send, esc to go back")
            .with_validator(json_object)
            .prompt()
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
    let content = Text::new(&format!("Output of {}:", call.tool_name))
        .with_help_message("enter to send")
        .prompt()?;
    Ok(Answer::ToolOutput(pb::ToolOutput {
        content,
        is_error: false,
    }))
}
