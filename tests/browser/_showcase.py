"""A believable agent for the accessibility checks and the docs' screenshots: an accounts-payable assistant.

Its model plays the plan of each request in :data:`PLANS` (the request is the run's first user message), so a
run's conversation reads like a real one; its two tools have previews, as a real deployment's would.
"""

from __future__ import annotations

import json
from typing import Any

from handrail.dataclasses import ChatMessage, ChatRole
from handrail.testing import call, reply
from handrail.tools import Preview, tool

PAY_INVOICE = "Pay Acme's March invoice (INV-2024-0317, 1,250.00 EUR) and let Ann know it is done."
REMIND_LATE = "Remind Northwind Traders that invoice INV-2024-0288 is 30 days overdue."
PAY_SMALL = "Refund Jo Park the 240 EUR train tickets from the offsite."
PLANS: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {
    PAY_INVOICE: [
        [
            ("transfer", {"iban": "DE89 3704 0044 0532 0130 00", "payee": "Acme GmbH", "amount_eur": 1250.0,
                          "reference": "INV-2024-0317"}),
            ("send_email", {"to": "ann@example.com", "subject": "Acme March invoice paid",
                            "body": "Hi Ann,\n\nThe **Acme** invoice *INV-2024-0317* (1,250.00 EUR) is paid.\n\n"
                                    "- paid from: operating account\n- value date: tomorrow\n\nThanks!"}),
        ]
    ],
    REMIND_LATE: [
        [
            ("send_email", {"to": "accounts@northwind.example", "subject": "Invoice INV-2024-0288 is overdue",
                            "body": "Hello,\n\nOur records show invoice **INV-2024-0288** (3,980.00 EUR) is "
                                    "30 days past due. Could you tell us when to expect payment?\n\n"
                                    "Kind regards,\nAccounts payable"}),
        ]
    ],
    PAY_SMALL: [
        [("transfer", {"iban": "NL91 ABNA 0417 1643 00", "payee": "Jo Park", "amount_eur": 240.0,
                       "reference": "Offsite train tickets"})]
    ],
}  # fmt: skip
"""``{request: steps}``: each step the calls one model reply makes."""

POLICY = (
    "Transfers over **100 EUR** need a person. Check the IBAN and the amount against the invoice "
    "([payment runbook](https://example.org/runbook/payments))."
)
"""The transfer's policy text, shown as "Why it asks"."""


def transfer_preview(arguments: dict[str, Any]) -> Preview:
    """What the bank would be asked to do."""
    amount = float(arguments.get("amount_eur", 0))
    lines = [
        f"Pay       {amount:,.2f} EUR",
        f"to        {arguments.get('payee', '?')}",
        f"IBAN      {arguments.get('iban', '?')}",
        f"reference {arguments.get('reference', '')}",
        f"from      operating account (balance after: {9662.55 - amount:,.2f} EUR)",
    ]
    return Preview("text", "\n".join(lines), title="Bank transfer")


@tool(preview=transfer_preview)
def transfer(iban: str, payee: str, amount_eur: float, reference: str) -> str:
    """Send a bank transfer from the operating account.

    Args:
        iban: The payee's IBAN.
        payee: The payee's name, as on the invoice.
        amount_eur: How much, in euros.
        reference: The reference the payee sees (an invoice number).
    """
    return f"transferred {amount_eur:.2f} EUR to {payee}"


def email_preview(arguments: dict[str, Any]) -> Preview:
    """The email as its reader would see it."""
    head = f"**To:** {arguments.get('to', '?')}\n\n**Subject:** {arguments.get('subject', '')}"
    return Preview("markdown", f"{head}\n\n{arguments.get('body', '')}", title="Email")


@tool(preview=email_preview)
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email from accounts payable.

    Args:
        to: The address.
        subject: The subject line.
        body: The text (markdown).
    """
    return f"sent to {to}"


def plan_replies(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    """The model: the next step of the request's plan, or a summary once every step was called."""
    request = next((m.text or "" for m in messages if m.role is ChatRole.USER), "")
    steps = PLANS.get(request, [])
    done = sum(1 for m in messages if m.role is ChatRole.ASSISTANT and m.tool_calls)
    if done < len(steps):
        return reply(*(call(name, args, f"c{done}_{i}") for i, (name, args) in enumerate(steps[done])))
    results = [str(r.result) for m in messages if m.role is ChatRole.TOOL for r in m.tool_call_results]
    return reply("Done: " + "; ".join(results))


AGENT_FILE = (
    "generator:\n"
    "  type: handrail.testing.FunctionChatGenerator\n"
    "  init_parameters: {function: tests.browser._showcase.plan_replies}\n"
    "system_prompt: You are the accounts-payable assistant of Example Ltd.\n"
    "tools: [tests.browser._showcase.transfer, tests.browser._showcase.send_email]\n"
    "confirmation:\n"
    f"  transfer: {{ask_when: amount_eur > 100, description: {json.dumps(POLICY)}, expires_after_seconds: 86400}}\n"
    "  send_email: always\n"
    "allowed_modules: [tests.browser]\n"
)
"""The agent file ``payables.yaml``."""
