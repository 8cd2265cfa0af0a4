from django.urls import path

from core.views import ask, claims, conflicts, documents, feedback, glossary, runs, sources

urlpatterns = [
    path("", ask.ask, name="ask"),
    path("questions/", ask.history, name="history"),
    path("questions/<int:pk>/", ask.question_detail, name="question-detail"),
    path("questions/<int:pk>/panel/", ask.question_panel, name="question-panel"),
    path("questions/<int:pk>/votes.csv", documents.question_votes_csv, name="question-votes-csv"),
    path("questions/<int:pk>/feedback/", feedback.question_feedback, name="question-feedback"),
    path("documents/<int:pk>/", documents.document_detail, name="document-detail"),
    path("sources/<int:pk>/documents/", documents.source_documents, name="source-documents"),
    path("runs/<int:pk>/scores.csv", documents.run_scores_csv, name="run-scores-csv"),
    path("sources/", sources.source_list, name="source-list"),
    path("sources/<int:pk>/", sources.source_detail, name="source-detail"),
    path("sources/<int:pk>/claims/", claims.source_claims, name="source-claims"),
    path("claims/", claims.claim_list, name="claim-list"),
    path("claims/subject/", claims.claim_subject, name="claim-subject"),
    path("claims/conflict/", claims.claim_conflict, name="claim-conflict"),
    path("runs/", runs.run_list, name="run-list"),
    path("runs/start/", runs.run_start, name="run-start"),
    path("runs/start-claims/", runs.run_start_claims, name="run-start-claims"),
    path("runs/<int:pk>/", runs.run_detail, name="run-detail"),
    path("runs/<int:pk>/result/", runs.run_result, name="run-result"),
    path("runs/<int:pk>/resume/", runs.run_resume, name="run-resume"),
    path("runs/<int:pk>/checks/", runs.run_checks, name="run-checks"),
    path("conflicts/", conflicts.conflicts, name="conflicts"),
    path("glossary/", glossary.glossary, name="glossary"),
]
