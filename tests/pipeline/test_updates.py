"""Turns that say something changed (pipeline/updates.py), and current facts first only for
them (`prefer_later_restatements` with `needs_change`), on a trip moved from Ljubljana to
Piran and a conversation coming back to a topic."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from factories import make_passage

from smartsearch_mcp.config import RankConfig
from smartsearch_mcp.output import format_recall, recall_output
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.adjust.current import current_facts, prefer_later_restatements
from smartsearch_mcp.pipeline.analyze import analyze_query
from smartsearch_mcp.pipeline.render import passage_line
from smartsearch_mcp.pipeline.updates import (
    asked_value_kinds,
    gives_a_new_value,
    keeps_to_what_was_asked,
    names_a_replaced_value,
    replaced_values,
    shares_a_subject,
    states_a_change,
    values_of,
)
from smartsearch_mcp.types import Candidate, RecallResult, Scored, Successor


def test_a_change_is_said_with_a_verb_adverb_or_phrase_of_change() -> None:
    assert states_a_change("Change of plans: Anselm and I moved the March trip to Piran.")
    assert states_a_change("We upgraded to Rails 7.2 this morning")
    assert states_a_change("the hall is taken, we can use the upstairs room instead")
    assert states_a_change("The caterer cancelled on us")
    assert states_a_change("I don't play the guitar anymore")
    assert states_a_change("Corvid moved the panel interview to May 6")
    assert states_a_change("Open rates were poor, I'm switching the newsletter to Buttondown.")
    assert states_a_change("The board bumped the grant")
    assert states_a_change("the standup is now at 9:30")
    assert states_a_change("we dropped the catering, so the cost goes back down to $900")
    assert states_a_change("rent went up to $1,450 this month")
    assert not states_a_change("With more sleep and less coffee, I'm hoping for some changes.")
    assert not states_a_change("Your tomatoes look great, any updates on the harvest?")
    assert not states_a_change("Tell me how the exam turns out!")
    assert not states_a_change("We're planning the March trip to Ljubljana.")
    assert not states_a_change("I took the kids kayaking again on Sunday, so fun!")
    assert not states_a_change("The remover was great")  # a word, not its inside


def item(turn_id: int, text: str, score: float, session: str, when: str) -> Scored:
    passage = make_passage(turn_id, text, session_id=session, timestamp=when)
    return Scored(Candidate(passage, 1.0), score, confidence=score)


def ids(items: list[Scored]) -> list[int]:
    return [s.candidate.passage.turn.id for s in items]


SIMILAR = [[1.0, 0.6], [0.6, 1.0]]


def test_only_a_later_turn_that_says_something_changed_supersedes() -> None:
    moved = [
        item(1, "We're thinking Ljubljana for the March trip.", 0.9, "s1", "2026-10-26T19:00"),
        item(2, "The night train stops in winter, so we moved the March trip to Piran.", 0.7, "s3",
             "2026-11-12T09:00"),
    ]  # fmt: skip
    back_again = [
        item(1, "I love sketching the old lighthouse.", 0.9, "s1", "2023-05-01T10:00"),
        item(2, "Sketched the lighthouse again last weekend!", 0.7, "s5", "2023-07-01T10:00"),
    ]
    assert ids(prefer_later_restatements(moved, SIMILAR, 0.45, needs_change=True)) == [2, 1]
    assert ids(prefer_later_restatements(back_again, SIMILAR, 0.45, needs_change=True)) == [1, 2]
    assert ids(prefer_later_restatements(back_again, SIMILAR, 0.45)) == [2, 1]  # similarity alone


def test_with_same_speaker_only_a_persons_own_later_statement_supersedes_theirs() -> None:
    def by(turn_id: int, speaker: str, text: str, score: float, session: str, when: str):
        passage = make_passage(turn_id, text, session_id=session, timestamp=when, speaker=speaker)
        return Scored(Candidate(passage, 1.0), score, confidence=score)

    mine = by(
        1, "Ines", "for my bday lunch lets do the Crooked Spoon on july 3", 0.9, "c3", "2026-05-26"
    )
    moved = by(2, "Ines", "change of plan: the Crooked Spoon cancelled, moved to Salt & Ember", 0.7,
               "c4", "2026-06-16")  # fmt: skip
    theirs = by(3, "Jules", "we moved the lunch with my parents to the Crooked Spoon too", 0.7,
                "c5", "2026-06-20")  # fmt: skip
    assert ids(prefer_later_restatements([mine, moved], SIMILAR, 0.45, same_speaker=True)) == [
        2,
        1,
    ]
    assert ids(prefer_later_restatements([mine, theirs], SIMILAR, 0.45, same_speaker=True)) == [
        1,
        3,
    ]
    assert ids(prefer_later_restatements([mine, theirs], SIMILAR, 0.45)) == [3, 1]


def test_a_weakly_matched_update_supersedes_when_the_confidence_share_allows() -> None:
    # "which editor do I use?": the switch names the new editor, not the question's words
    old = item(1, "I write all my code in Vim these days.", 0.9, "a1", "2026-03-02T10:00")
    new = item(2, "Switched to Helix last week, the modal keys are kinder.", 0.2, "a4",
               "2026-04-20T10:00")  # fmt: skip
    assert ids(prefer_later_restatements([old, new], SIMILAR, 0.45, needs_change=True)) == [1, 2]
    assert ids(
        prefer_later_restatements([old, new], SIMILAR, 0.45, needs_change=True, min_confidence=0.1)
    ) == [2, 1]


def test_a_later_turn_is_about_the_earlier_by_the_questions_words_or_another() -> None:
    recruiter = "The recruiter at Corvid is Nina Falk, she wants a call on Friday."
    moved = "Corvid moved the panel interview to May 6, the hiring manager is away."
    assert not shares_a_subject(moved, recruiter, {"recruiter", "corvid"})  # no recruiter
    assert shares_a_subject(moved, recruiter, set())  # "corvid"
    booked, switched = "Booked the trip to Ljubljana.", "we switched the trip to Piran."
    assert shares_a_subject(switched, booked, {"trip", "go"})  # both name the trip
    taking = "ok, noted. I've been taking cetirizine 10 mg every morning."
    switched_pill = "My doctor switched me from cetirizine to loratadine."
    assert shares_a_subject(switched_pill, taking, {"medication", "tak", "allergy"})  # "cetirizine"
    # inflections count as one word: "backups" is the question's "backup"
    assert not shares_a_subject("Backups moved to 4am.", "The database backup runs at 1am.",
                                {"backup", "database"})  # fmt: skip


def test_with_the_question_a_restatement_must_share_more_than_its_words() -> None:
    recruiter = item(1, "The recruiter at Corvid is Nina Falk, she wants a call on Friday.",
                     0.9, "j1", "2026-04-01T10:00")  # fmt: skip
    moved = item(2, "Corvid moved the panel interview to May 6, the hiring manager is away.", 0.6,
                 "j3", "2026-04-15T10:00")  # fmt: skip
    both = [recruiter, moved]
    assert ids(prefer_later_restatements(both, SIMILAR, 0.45, needs_change=True)) == [2, 1]
    asked = {"recruiter", "corvid"}
    assert ids(prefer_later_restatements(both, SIMILAR, 0.45, needs_change=True, asked=asked)) == [
        1,
        2,
    ]
    round_ = item(1, "The panel interview at Corvid is on May 4.", 0.9, "j2", "2026-04-08T10:00")
    assert ids(
        prefer_later_restatements([round_, moved], SIMILAR, 0.45, needs_change=True, asked=asked)
    ) == [2, 1]


def test_values_are_read_by_kind_and_a_new_one_of_a_kind_the_earlier_gave_counts() -> None:
    said = "2026-11-24T16:30:00"
    budget = values_of("The board approved $72k for the retreat, 3,400 euros of it for the hotel.")
    assert budget["amount"] == {"$72k", "3400euros"}
    assert "number" not in budget  # the amounts' numbers are not counted again
    assert values_of("Standup moves to 9:30, the demo is at 4pm")["clock"] == {"9:30", "4pm"}
    assert values_of("Settled: the opening is Thursday December 10.", said)["date"] == {
        "2026-12-10"
    }
    assert values_of("the web app listens on 5173 behind caddy 2.7")["number"] == {"5173", "2.7"}
    assert values_of("sounds good, thanks!") == {}

    port = values_of("the web app listens on 5173")
    assert gives_a_new_value(values_of("5173 clashed with the docs server, it runs on 4321"), port)
    assert not gives_a_new_value(values_of("5173 works fine for me"), port)
    assert not gives_a_new_value(values_of("the grant is $30k"), port)  # another kind


def test_a_later_turn_giving_a_new_value_supersedes_without_a_verb_of_change() -> None:
    first = item(1, "Proposed opening date for the Harbour Gallery is Thursday November 19.", 0.9,
                 "c1", "2026-10-28T09:30")  # fmt: skip
    final = item(2, "Settled: the opening is Thursday December 10. No more delays.", 0.4, "c4",
                 "2026-11-24T16:34")  # fmt: skip
    again = item(3, "The opening is still Thursday November 19, see you all there.", 0.4, "c2",
                 "2026-11-01T10:00")  # fmt: skip
    out = prefer_later_restatements([first, final], SIMILAR, 0.45, needs_change=True,
                                    min_confidence=0.1)  # fmt: skip
    assert ids(out) == [2, 1]
    assert ids(prefer_later_restatements([first, again], SIMILAR, 0.45, needs_change=True,
                                         min_confidence=0.1)) == [1, 3]  # fmt: skip


def test_the_superseded_passage_names_the_turn_that_replaced_it_whichever_ranks_first() -> None:
    old = item(1, "We'll send the newsletter through Sendy.", 0.9, "c1", "2026-10-28T09:30")
    new = item(2, "Sendy's open rate was poor, switching the newsletter to Buttondown.", 0.8, "c2",
               "2026-11-05T14:10")  # fmt: skip
    other = item(3, "The workshop needs slides.", 0.5, "c3", "2026-11-06T10:00")
    similar = [[1.0, 0.6, 0.1], [0.6, 1.0, 0.1], [0.1, 0.1, 1.0]]
    for ranked in ([old, new, other], [new, old, other]):
        out = prefer_later_restatements(ranked, similar, 0.45, needs_change=True)
        assert ids(out) == [2, 1, 3]
        by_id = {s.candidate.passage.turn.id: s for s in out}
        assert by_id[1].superseded_by == Successor(2, "2026-11-05T14:10")
        assert by_id[2].superseded_by is None and by_id[3].superseded_by is None
    line = passage_line(by_id[1])
    assert line.endswith("Sendy. (superseded by #2, 2026-11-05)")


def test_a_new_value_counts_only_for_a_question_that_asks_for_one() -> None:
    assert asked_value_kinds("When is the opening?")
    assert asked_value_kinds("What port does the web app listen on?")
    assert asked_value_kinds("how much is the rent now")
    assert not asked_value_kinds("Why did we drop Sendy?")
    assert not asked_value_kinds("who is writing the catalogue essay")
    first = item(1, "Proposed opening date for the Harbour Gallery is Thursday November 19.", 0.9,
                 "c1", "2026-10-28T09:30")  # fmt: skip
    final = item(2, "Settled: the opening is Thursday December 10.", 0.4, "c4", "2026-11-24T16:34")
    ranked = [first, final]
    kept = prefer_later_restatements(
        ranked, SIMILAR, 0.45, needs_change=True, min_confidence=0.1, value_kinds=frozenset()
    )
    assert ids(kept) == [1, 2]


def test_a_question_asks_for_values_of_its_kinds_only() -> None:
    assert asked_value_kinds("When is the dentist?") >= {"date", "clock"}
    assert asked_value_kinds("What time does the nightly job run?") >= {"clock", "date"}
    assert asked_value_kinds("Which Postgres version are we upgrading to?") == {"number"}
    assert asked_value_kinds("What's the launch budget?") >= {"amount"}
    assert "date" not in asked_value_kinds("how much is the rent now")
    assert asked_value_kinds("Who is writing the release notes?") == set()
    window = values_of("Planning the Postgres 14 -> 16 upgrade. Window Saturday Nov 15, 22:00 UTC.",
                       "2026-11-02T11:00")  # fmt: skip
    moved = values_of("Moving the upgrade window to Sunday Nov 16, 06:00 UTC", "2026-11-12T15:34")
    assert gives_a_new_value(moved, window)  # another day and time...
    assert gives_a_new_value(moved, window, asked_value_kinds("When is the upgrade window?"))
    # ...but no new version
    assert not gives_a_new_value(moved, window, asked_value_kinds("Which version is it?"))


def test_a_window_moved_is_no_new_version_asked_for() -> None:
    plan = item(1, "Planning the Postgres 14 -> 16 upgrade. Window Saturday Nov 15, 22:00 UTC.",
                0.9, "c1", "2026-11-02T11:00")  # fmt: skip
    moved = item(2, "Shifting the upgrade window to Sunday Nov 16, 06:00 UTC, traffic is lowest",
                 0.4, "c3", "2026-11-12T15:34")  # fmt: skip
    asked = {"postgres", "version", "upgrad"}

    def ranked(question: str) -> list[int]:
        kept = prefer_later_restatements(
            [plan, moved], SIMILAR, 0.45, needs_change=True, min_confidence=0.1, asked=asked,
            value_kinds=asked_value_kinds(question),
        )  # fmt: skip
        return ids(kept)

    assert ranked("Which Postgres version are we upgrading to?") == [1, 2]
    assert ranked("When is the Postgres upgrade?") == [2, 1]


def test_the_verb_of_a_change_is_not_what_changed() -> None:
    moving = "We signed for the flat on Harbour Road, moving in spring."
    moved = "The dentist moved Leo's appointment to 3pm."
    assert not shares_a_subject(moved, moving, {"move"})  # asked "when do we move"
    assert shares_a_subject("We move in May now, not spring: the flat on Harbour Road is late",
                            moving, {"move"})  # fmt: skip


def test_a_reply_carrying_out_a_request_does_not_supersede_it() -> None:
    def said(turn_id: int, role: str, text: str, session: str, when: str) -> Scored:
        passage = make_passage(turn_id, text, session_id=session, timestamp=when, role=role)
        return Scored(Candidate(passage, 1.0), 1.0 - turn_id / 100, confidence=0.9)

    moved = said(12, "assistant", "Moved the API to 8080 in settings.py.", "s2", "2026-11-09T14:30")
    asked = said(27, "user", "jenkins grabbed 8080 on the build box, use 9090 for the api",
                 "s4", "2026-11-23T16:40")  # fmt: skip
    done = said(28, "assistant", "Changed the port from 8080 to 9090 in settings.py.", "s4",
                "2026-11-23T16:41")  # fmt: skip
    similar = [[1.0] * 3] * 3
    out = prefer_later_restatements([moved, asked, done], similar, 0.45, needs_change=True)
    by_id = {s.candidate.passage.turn.id: s.superseded_by for s in out}
    assert by_id[12] == Successor(28, "2026-11-23T16:41")  # the port it gave was replaced
    assert by_id[27] is None  # the request the change carried out was not
    assert ids(out)[-1] == 12


def test_the_structured_result_names_the_superseding_turn() -> None:
    old = dataclasses.replace(
        item(4, "The grant for the retreat is $60k.", 0.9, "c1", "2026-10-28T09:42"),
        superseded_by=Successor(20, "2026-11-24T16:34:00"),
    )
    new = item(20, "grant goes back down to $52k", 0.8, "c4", "2026-11-24T16:34:00")
    result = RecallResult([new, old], 30, 1500, ["bi_encoder"], [], confidence=[0.8, 0.9])
    out = recall_output(result).passages
    assert (out[0].superseded_by, out[0].superseded_at) == (None, None)
    assert (out[1].superseded_by, out[1].superseded_at) == (20, "2026-11-24T16:34:00")
    assert (
        "#4: The grant for the retreat is $60k. (superseded by #20, 2026-11-24)"
        in format_recall("What's the retreat grant?", result)
    )


def test_a_replacement_said_outright_names_the_value_given_up() -> None:
    assert replaced_values("Upgraded Python from 3.10 to 3.12 in the Dockerfile.") == {"3.10"}
    assert replaced_values("Replaced `moment` with `luxon` in utils/time.ts") == {"moment"}
    assert replaced_values("We'll use Buttondown instead of Sendy, it's cheaper.") == {"sendy"}
    assert replaced_values("Moved the cache from Memcached to Redis Cluster") == {"memcached"}
    assert replaced_values("retries 3 -> 5") == {"3"}
    # a question replaces nothing, and "from ... to" without a change is a route or a range
    assert replaced_values("should we move from Flask to FastAPI?") == set()
    assert replaced_values("We drove from Graz to Vienna on Sunday.") == set()
    assert replaced_values("the request goes from the proxy to the app") == set()
    # function words are no value: "a" or "the" would be named by nearly every earlier turn
    assert replaced_values("A retry gets the first invoice instead of a second one.") == set()
    assert replaced_values("Switched it from this to that.") == set()
    assert replaced_values("moved the bucket from the old bucket to the archive") == {
        "the old bucket"
    }


def test_an_earlier_turn_holds_a_replaced_value_only_as_a_whole_word() -> None:
    upgraded = "Upgraded Python from 3.10 to 3.12 in the Dockerfile."
    assert names_a_replaced_value(replaced_values(upgraded), "pin python 3.10 in the image please")
    assert not names_a_replaced_value(
        replaced_values(upgraded), "python 3.10.4 is what the runner has"
    )
    assert not names_a_replaced_value(
        replaced_values("Bumped the retries from 10 to 12"), "shipped on 2026-03-10"
    )
    assert not names_a_replaced_value(replaced_values(upgraded), "Use the slim base image.")


def test_a_replacement_said_outright_supersedes_whatever_the_similarity() -> None:
    unrelated = [[1.0, 0.1], [0.1, 1.0]]  # a long first turn about many things
    spec = item(1, "new service: python 3.10, postgres 15, deploy with fly.io, logs to loki",
                0.9, "s1", "2026-02-01T10:00")  # fmt: skip
    upgrade = item(2, "Upgraded Python from 3.10 to 3.12 in the Dockerfile and CI.", 0.5, "s1",
                   "2026-02-01T11:00")  # fmt: skip
    ranked = prefer_later_restatements(
        [spec, upgrade], unrelated, 0.45, needs_change=True, same_speaker=True,
        min_confidence=0.1, asked={"python", "version"},
    )  # fmt: skip
    assert ids(ranked) == [2, 1]
    assert ranked[1].superseded_by == Successor(2, "2026-02-01T11:00")
    # an earlier turn that does not give the replaced value stays where it was
    other = item(1, "new service: postgres 15, deploy with fly.io", 0.9, "s1", "2026-02-01T10:00")
    assert ids(prefer_later_restatements([other, upgrade], unrelated, 0.45, needs_change=True)) == [
        1,
        2,
    ]


def test_the_assistant_carrying_out_a_users_change_updates_what_the_user_said() -> None:
    def said(turn_id: int, role: str, text: str, score: float, session: str, when: str):
        passage = make_passage(turn_id, text, session_id=session, timestamp=when, role=role)
        return Scored(Candidate(passage, 1.0), score, confidence=score)

    asked = said(1, "user", "keep the sessions in memcached for now", 0.9, "c1", "2026-03-01")
    done = said(2, "assistant", "Moved the sessions to Redis; memcached is gone from compose.",
                0.6, "c2", "2026-03-09")  # fmt: skip
    moved = prefer_later_restatements(
        [asked, done], SIMILAR, 0.45, needs_change=True, same_speaker=True
    )
    assert ids(moved) == [2, 1]


def test_an_update_is_of_the_turn_it_is_most_like_and_of_what_that_one_replaced() -> None:
    # Asked "when do we move?": the check-up moved to another December day shares only the
    # month with the flat's moving day; it is an update of the check-up, not of the move.
    flat = item(1, "We got the flat on Mill Lane! Moving day is December 18.", 0.9, "s2",
                "2026-11-08T10:00")  # fmt: skip
    moved = item(2, "Dr. Ilves's clinic called: the cat's check-up moved to December 9.", 0.8,
                 "s3", "2026-11-15T10:00")  # fmt: skip
    checkup = item(3, "The cat's check-up is December 2 with Dr. Ilves.", 0.7, "s1",
                   "2026-11-01T10:00")  # fmt: skip
    similarity = [[1.0, 0.5, 0.3], [0.5, 1.0, 0.8], [0.3, 0.8, 1.0]]
    asked = {"move"}
    out = prefer_later_restatements(
        [flat, moved, checkup], similarity, 0.45, needs_change=True, asked=asked
    )
    assert ids(out) == [1, 2, 3]
    assert [s.superseded_by for s in out] == [None, None, Successor(2, "2026-11-15T10:00")]
    # Without the check-up among the passages the flat is what it is most like.
    alone = prefer_later_restatements([flat, moved], similarity, 0.45, needs_change=True,
                                      asked=asked)  # fmt: skip
    assert ids(alone) == [2, 1]
    # A date moved twice: the last update is most like the one before it, and replaces what
    # that one replaced too.
    first = item(1, "Launch is set for March 3.", 0.9, "s1", "2026-02-01T10:00")
    second = item(2, "Launch moved to March 10, the build failed.", 0.8, "s2", "2026-02-10T10:00")
    third = item(3, "Launch pushed again, now March 17.", 0.7, "s3", "2026-02-20T10:00")
    chain = [[1.0, 0.8, 0.7], [0.8, 1.0, 0.9], [0.7, 0.9, 1.0]]
    out = prefer_later_restatements([first, second, third], chain, 0.45, needs_change=True)
    assert ids(out)[0] == 3
    assert {s.candidate.passage.turn.id: s.superseded_by for s in out}[1] == Successor(
        3, "2026-02-20T10:00"
    )


def test_a_turn_that_says_several_things_is_updated_only_in_what_the_question_asks() -> None:
    job = item(1, "`backup.sh` copies the uploads to `gs://snap-eu/app`, cron `0 1 * * *`.",
               0.9, "s1", "2026-03-02T10:00")  # fmt: skip
    cron = item(2, "The backup cron is now `30 2 * * *`.", 0.8, "s2", "2026-03-09T10:00")
    bucket = "Which GS bucket holds the snapshots?"
    assert not keeps_to_what_was_asked(cron_text := cron.candidate.passage.text,
                                       job.candidate.passage.text, {"gs", "bucket"})  # fmt: skip
    assert keeps_to_what_was_asked(cron_text, job.candidate.passage.text, {"backup", "run"})

    def ranked(question: str, asked: set[str], *items: Scored) -> list[int]:
        return ids(prefer_later_restatements(
            list(items), SIMILAR, 0.45, needs_change=True, min_confidence=0.1, asked=asked,
            value_kinds=asked_value_kinds(question)))  # fmt: skip

    assert ranked(bucket, {"gs", "bucket", "hold", "snapshot"}, job, cron) == [1, 2]
    assert ranked("When does the backup run?", {"backup", "run"}, job, cron) == [2, 1]
    # a new value of the kind asked for is what was asked, named or not
    moved = item(2, "Moved it to `30 2 * * *`, the uploads land late.", 0.8, "s2",
                 "2026-03-09T10:00")  # fmt: skip
    assert ranked("What time does the nightly copy start?", {"nightly", "copy", "start"},
                  job, moved) == [2, 1]  # fmt: skip


def test_a_value_replaced_outright_is_named_inside_a_path_and_only_in_its_clause() -> None:
    assert names_a_replaced_value({"snap-in"}, "reads `gs://snap-in/daily/*.json`")
    assert not names_a_replaced_value({"snap"}, "reads `gs://snap-in/daily/*.json`")
    assert not names_a_replaced_value({"80"}, "served on http://localhost:8080/api")  # a number
    job = item(1, "`sync.py` reads `gs://snap-in/` with pandas, and writes `gs://snap-out/`.",
               0.9, "s1", "2026-03-02T10:00")  # fmt: skip
    replaced = item(2, "Replaced `snap-in` with `snap-inbox` in `sync.env`.", 0.8, "s2",
                    "2026-03-09T10:00")  # fmt: skip
    for asked, order in (({"bucket", "read"}, [2, 1]), ({"bucket", "write"}, [1, 2])):
        out = prefer_later_restatements([job, replaced], SIMILAR, 0.45, needs_change=True,
                                        min_confidence=0.1, asked=asked)  # fmt: skip
        assert ids(out) == order, asked


def test_a_burst_updates_and_is_updated_as_one() -> None:
    # Ann proposes in one burst, changes the plan a day later in another: the change is said
    # in one message ("cancelled"), the new place in the next, and neither alone is much
    # like the message with the old place
    def msg(turn_id: int, text: str, score: float, session: str, when: str, by: str = "Ann"):
        passage = make_passage(
            turn_id, text, session_id=session, timestamp=when, speaker=by, role="other"
        )
        return Scored(Candidate(passage, 1.0), score, confidence=score)

    first = [
        msg(1, "dinner friday?", 0.9, "s1", "2026-03-02T18:00:00"),
        msg(2, "luigi's at 7", 0.9, "s1", "2026-03-02T18:00:10"),
    ]
    later = [
        msg(3, "ugh luigi's cancelled us, private event", 0.6, "s2", "2026-03-03T09:00:00"),
        msg(4, "thai place on 5th for dinner then? same time", 0.6, "s2", "2026-03-03T09:00:12"),
    ]
    alike = {frozenset({2, 3}): 0.8, frozenset({1, 4}): 0.5}  # "luigi's"; "dinner"

    def similarity(items: Sequence[Scored]) -> np.ndarray:
        turns = [s.candidate.passage.turn.id for s in items]
        return np.array(
            [[1.0 if a == b else alike.get(frozenset({a, b}), 0.1) for b in turns] for a in turns]
        )

    def ranked(burst_seconds: int) -> list[Scored]:
        context = Context(
            RankConfig(supersede=0.45, supersede_needs_change=True, supersede_same_speaker=True),
            burst_seconds,
            analyze_query("Where is dinner on friday?", None, datetime(2026, 3, 5)),
            similarity,
        )
        return current_facts([*first, aside, *later], context)

    # between them, a message of a burst (of Bo's) that nothing updates
    aside = msg(5, "the wine list there is great", 0.7, "s1", "2026-03-02T18:01:00", by="Bo")
    together = ranked(60)
    # the later burst first, its messages together; Bo's message keeps its place
    assert ids(together) == [3, 4, 5, 1, 2]
    assert [s.score for s in together] == [0.9, 0.9, 0.7, 0.6, 0.6]
    assert {s.candidate.passage.turn.id: s.superseded_by for s in together} == {
        1: Successor(3, "2026-03-03T09:00:00"),
        2: Successor(3, "2026-03-03T09:00:00"),
        3: None,
        4: None,
        5: None,
    }
    # message by message, the cancellation updates the old place, but the new place says no
    # change and is like nothing earlier: the old plan still comes first, the new one last
    assert ids(ranked(0)) == [1, 3, 5, 2, 4]
