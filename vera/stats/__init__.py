"""Statistics of a run: scores with cluster-bootstrap intervals, comparisons between
chatbots, and agreement among judges and human raters.

Every function here is pure (frames and lists in; frames, numbers or msgspec Structs
out) and deterministic for a given seed. The methods are described in docs/statistics.md.
"""

from vera.records import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, OVERALL, RaterRule
from vera.stats.agreement import (
    Agreement,
    NRTreatment,
    PairwiseKappa,
    RaterAgreement,
    RaterBlock,
    cohen_kappa,
    gwet_ac1,
    judge_agreement,
    krippendorff_alpha,
    percent_agreement,
    rater_agreement,
    units_from_long,
)
from vera.stats.bootstrap import (
    MC_Z,
    METHOD,
    BootstrapSpec,
    score_from_percentages,
    spec_of,
    summarise,
)
from vera.stats.compare import MAX_SETTLE_RESAMPLES, check_comparable, compare, compare_settled
from vera.stats.groupseq import DEFAULT_SPENDING, parse_spending
from vera.stats.humans import (
    CLINICIAN_DIMENSIONS,
    DEFAULT_RATER_RULE,
    ConfusionMatrices,
    ConsensusAgreement,
    PairedAgreement,
    PooledAgreement,
    TieRule,
    combine_raters,
    consensus,
    human_agreement,
    judge_vs_consensus,
    read_human_ratings,
)
from vera.stats.sequential import (
    NOT_RATED_CANDIDATE,
    NOT_WORSE,
    UNDECIDED,
    WORSE,
    SequenceLook,
    SequenceRow,
    Status,
    fixed_gate_levels,
    gate_sequence,
)

__all__ = [
    "CLINICIAN_DIMENSIONS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RATER_RULE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SPENDING",
    "MAX_SETTLE_RESAMPLES",
    "MC_Z",
    "METHOD",
    "NOT_RATED_CANDIDATE",
    "NOT_WORSE",
    "OVERALL",
    "UNDECIDED",
    "WORSE",
    "Agreement",
    "BootstrapSpec",
    "ConfusionMatrices",
    "ConsensusAgreement",
    "NRTreatment",
    "PairedAgreement",
    "PairwiseKappa",
    "PooledAgreement",
    "RaterAgreement",
    "RaterBlock",
    "RaterRule",
    "SequenceLook",
    "SequenceRow",
    "Status",
    "TieRule",
    "check_comparable",
    "cohen_kappa",
    "combine_raters",
    "compare",
    "compare_settled",
    "consensus",
    "fixed_gate_levels",
    "gate_sequence",
    "gwet_ac1",
    "human_agreement",
    "judge_agreement",
    "judge_vs_consensus",
    "krippendorff_alpha",
    "parse_spending",
    "percent_agreement",
    "rater_agreement",
    "read_human_ratings",
    "score_from_percentages",
    "spec_of",
    "summarise",
    "units_from_long",
]
