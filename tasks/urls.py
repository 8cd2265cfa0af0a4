from django.urls import path

from tasks import views

urlpatterns = [
    path("", views.job_list, name="job-list"),
    path("<int:pk>/", views.job_detail, name="job-detail"),
    path("<int:pk>/status/", views.job_status, name="job-status"),
    path("<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
]
