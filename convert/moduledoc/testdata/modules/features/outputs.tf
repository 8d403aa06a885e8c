output "id" {
  value       = terraform_data.this.id
  description = "The identifier."
}

output "secret" {
  value     = var.password
  sensitive = true
}

output "old_name" {
  value      = var.name
  deprecated = "Use output id instead."
}

output "settings" {
  value = var.settings
}
