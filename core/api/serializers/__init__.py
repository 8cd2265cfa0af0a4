"""What the API reads and writes, one module per area. Output shapes are explicit so the OpenAPI schema is exact.

Import from the area's module (``core.api.serializers.questions`` ...); every name is re-exported here too.
"""

from __future__ import annotations

from core.api.serializers.auth import (
    TokenRequestSerializer,
    TokenSerializer,
)
from core.api.serializers.common import (
    ErrorDetailSerializer,
    ErrorSerializer,
)
from core.api.serializers.jobs import (
    JobSerializer,
    ProgressSerializer,
)
from core.api.serializers.queries import (
    FactQuerySerializer,
    NewFactQuerySerializer,
    QuerySetSerializer,
)
from core.api.serializers.questions import (
    AskSerializer,
    ClusterSerializer,
    PassageSerializer,
    QuestionAcceptedSerializer,
    QuestionDetailSerializer,
    QuestionSerializer,
    VoteSerializer,
)
from core.api.serializers.runs import (
    AnswerClusterSerializer,
    ClusterMemberSerializer,
    DependenceExampleSerializer,
    DependencePairSerializer,
    DisagreementSerializer,
    GoldUpdateSerializer,
    PairwiseConflictsSerializer,
    QuestionConflictsSerializer,
    RunAcceptedSerializer,
    RunChangeSerializer,
    RunChangesSerializer,
    RunDependenceSerializer,
    RunDetailSerializer,
    RunSerializer,
    ScoreSerializer,
    StartRunSerializer,
)
from core.api.serializers.sources import (
    FORMATS,
    DocumentDetailSerializer,
    DocumentItemSerializer,
    DocumentSerializer,
    JsonUploadSerializer,
    MultipartUploadSerializer,
    ReliabilityHistorySerializer,
    ReliabilityPointSerializer,
    ReliabilitySerializer,
    SourceSerializer,
    UploadAcceptedSerializer,
)

__all__ = [
    "AnswerClusterSerializer",
    "AskSerializer",
    "ClusterMemberSerializer",
    "ClusterSerializer",
    "DependenceExampleSerializer",
    "DependencePairSerializer",
    "DisagreementSerializer",
    "DocumentDetailSerializer",
    "DocumentItemSerializer",
    "DocumentSerializer",
    "ErrorDetailSerializer",
    "ErrorSerializer",
    "FORMATS",
    "FactQuerySerializer",
    "GoldUpdateSerializer",
    "JobSerializer",
    "JsonUploadSerializer",
    "MultipartUploadSerializer",
    "NewFactQuerySerializer",
    "PairwiseConflictsSerializer",
    "PassageSerializer",
    "ProgressSerializer",
    "QuerySetSerializer",
    "QuestionAcceptedSerializer",
    "QuestionConflictsSerializer",
    "QuestionDetailSerializer",
    "QuestionSerializer",
    "ReliabilityHistorySerializer",
    "ReliabilityPointSerializer",
    "ReliabilitySerializer",
    "RunAcceptedSerializer",
    "RunChangeSerializer",
    "RunChangesSerializer",
    "RunDependenceSerializer",
    "RunDetailSerializer",
    "RunSerializer",
    "ScoreSerializer",
    "SourceSerializer",
    "StartRunSerializer",
    "TokenRequestSerializer",
    "TokenSerializer",
    "UploadAcceptedSerializer",
    "VoteSerializer",
]
